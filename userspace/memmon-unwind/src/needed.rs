//! The shared libraries a program will load: its `DT_NEEDED` entries and theirs, found
//! through `DT_RUNPATH`/`DT_RPATH` (`$ORIGIN` expanded) and the system's library
//! directories, as ld.so would find them in the common case (no `LD_LIBRARY_PATH`, no
//! `ld.so.cache` entries outside those directories). So that their tables can be compiled
//! while the program is stopped at its exec, before ld.so maps them.

use object::elf;
use object::read::elf::{Dyn, ElfFile64, FileHeader, SectionHeader};
use object::Endianness;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::arch::Arch;

/// Most libraries followed.
const LIBRARIES_MAX: usize = 256;

/// The `DT_NEEDED` names and the run paths (`DT_RUNPATH`, else `DT_RPATH`) of an ELF object.
fn dynamic_entries(data: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    let file = ElfFile64::<Endianness>::parse(data).ok()?;
    let endian = file.endian();
    let header = file.elf_header();
    let sections = header.sections(endian, data).ok()?;
    let (dynamic, link) = sections.iter().find_map(|section| {
        (section.sh_type(endian) == elf::SHT_DYNAMIC)
            .then(|| section.dynamic(endian, data).ok().flatten())
            .flatten()
    })?;
    let strings = sections.strings(endian, data, link).ok()?;
    let (mut needed, mut runpath, mut rpath) = (Vec::new(), Vec::new(), Vec::new());
    for entry in dynamic {
        let tag = entry.d_tag(endian);
        let Ok(value) = u32::try_from(entry.d_val(endian)) else {
            continue;
        };
        let text = || {
            strings
                .get(value)
                .ok()
                .map(|s| String::from_utf8_lossy(s).into_owned())
        };
        match tag {
            elf::DT_NEEDED => needed.extend(text()),
            elf::DT_RUNPATH => runpath.extend(text()),
            elf::DT_RPATH => rpath.extend(text()),
            _ => {}
        }
    }
    let paths = if runpath.is_empty() { rpath } else { runpath };
    let dirs = paths
        .iter()
        .flat_map(|p| p.split(':'))
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .collect();
    Some((needed, dirs))
}

/// The libraries `program` (whose bytes are `data`) needs, directly or through others, as
/// paths that exist; in the order found. They are looked for in the system library
/// directories of the program's architecture ([`Arch::system_library_dirs`]), and must be
/// objects of that architecture.
pub fn needed_libraries(program: &Path, data: &[u8]) -> Vec<PathBuf> {
    let machine = ElfFile64::<Endianness>::parse(data)
        .map(|file| file.elf_header().e_machine(file.endian()))
        .unwrap_or(elf::EM_NONE);
    let Some(arch) = [Arch::X86_64, Arch::Aarch64]
        .into_iter()
        .find(|arch| arch.elf_machine() == machine)
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: Vec<(PathBuf, Vec<u8>)> = vec![(program.to_path_buf(), data.to_vec())];
    while let Some((path, data)) = queue.pop() {
        let Some((needed, run_dirs)) = dynamic_entries(&data) else {
            continue;
        };
        let origin = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let dirs: Vec<PathBuf> = run_dirs
            .iter()
            .map(|d| PathBuf::from(d.replace("$ORIGIN", &origin.to_string_lossy())))
            .chain(arch.system_library_dirs().iter().map(PathBuf::from))
            .collect();
        for name in needed {
            if found.len() >= LIBRARIES_MAX || !seen.insert(name.clone()) {
                continue;
            }
            let candidates: Vec<PathBuf> = if name.contains('/') {
                vec![PathBuf::from(&name)]
            } else {
                dirs.iter().map(|d| d.join(&name)).collect()
            };
            // The first that is a 64-bit ELF object of the program's architecture, as ld.so
            // skips the others.
            let library = candidates.into_iter().find_map(|path| {
                let bytes = std::fs::read(&path).ok()?;
                let file = ElfFile64::<Endianness>::parse(&*bytes).ok()?;
                (file.elf_header().e_machine(file.endian()) == machine).then_some((path, bytes))
            });
            if let Some((library, bytes)) = library {
                found.push(library.clone());
                queue.push((library, bytes));
            }
        }
    }
    found
}

/// The object address of `_dl_debug_state` in a dynamic loader whose bytes are `data`
/// (glibc's ld.so exports it): the function the loader calls for debuggers (the `r_debug`
/// protocol) when it starts mapping objects and when it is done. At a program's start the
/// second call comes once the libraries it needs are mapped, before their constructors run.
pub fn loader_debug_state(data: &[u8]) -> Option<u64> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(data).ok()?;
    let symbol = file
        .dynamic_symbols()
        .find(|symbol| symbol.name() == Ok("_dl_debug_state"))?;
    Some(symbol.address()).filter(|&address| address != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_has_its_debug_state() {
        let data = std::fs::read("/lib64/ld-linux-x86-64.so.2").expect("ld.so");
        assert!(loader_debug_state(&data).is_some());
        let exe =
            std::fs::read(std::env::current_exe().expect("the test binary")).expect("readable");
        assert_eq!(loader_debug_state(&exe), None);
    }

    #[test]
    fn a_dynamic_program_needs_libc() {
        let exe = std::env::current_exe().expect("the test binary");
        let data = std::fs::read(&exe).expect("readable");
        let found = needed_libraries(&exe, &data);
        assert!(
            found.iter().any(|p| p.ends_with("libc.so.6")),
            "libc among {found:?}"
        );
    }
}
