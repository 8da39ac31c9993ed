//! Table keys: the 16 bytes that name one object (docs/unwind.md, "A key").
//!
//! An object with a GNU build ID is named by the first 16 bytes of it (zero-padded when
//! shorter). One without is named by its device and inode: `0xff 'D' 'I'`, 5 zero bytes, the
//! device number as the kernel codes it (`major << 20 | minor`, u32 little-endian) and the
//! low 32 bits of the inode (u32 little-endian).

use std::fmt;

pub use memmon_objects::elf::build_id_of_data as build_id;
pub use memmon_objects::procfs::FileId;

/// Bytes of a key.
pub const KEY_BYTES: usize = 16;

/// The 16-byte name of one object's table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key(pub [u8; KEY_BYTES]);

impl Key {
    /// The key of an object with GNU build ID `id`: its first 16 bytes, zero-padded.
    pub fn from_build_id(id: &[u8]) -> Key {
        let mut key = [0u8; KEY_BYTES];
        let n = id.len().min(KEY_BYTES);
        key[..n].copy_from_slice(&id[..n]);
        Key(key)
    }

    /// The key of an object without a build ID, by the file it is read from.
    pub fn from_file_id(id: FileId) -> Key {
        let mut key = [0u8; KEY_BYTES];
        key[0] = 0xff;
        key[1] = b'D';
        key[2] = b'I';
        let dev = (id.major << 20) | (id.minor & 0xf_ffff);
        key[8..12].copy_from_slice(&dev.to_le_bytes());
        // CAST: the format keeps the low 32 bits of the inode.
        key[12..16].copy_from_slice(&(id.inode as u32).to_le_bytes());
        Key(key)
    }

    /// Whether this key is of the device/inode form.
    pub fn is_file_id(&self) -> bool {
        self.0[..8] == [0xff, b'D', b'I', 0, 0, 0, 0, 0]
    }

    /// The key written as 32 lowercase hexadecimal digits, as the unwind file lists it.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The key read from 32 hexadecimal digits.
    pub fn from_hex(text: &str) -> Option<Key> {
        if text.len() != 2 * KEY_BYTES || !text.is_ascii() {
            return None;
        }
        let mut key = [0u8; KEY_BYTES];
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Key(key))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.to_hex())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The key of the ELF object in `data`: by its build ID when it has one, else by `file`
/// (its device and inode) when given.
pub fn key_for_object(data: &[u8], file: Option<FileId>) -> Option<Key> {
    match build_id(data) {
        Some(id) => Some(Key::from_build_id(&id)),
        None => file.map(Key::from_file_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_id_form() {
        let key = Key::from_file_id(FileId {
            major: 0xfd,
            minor: 1,
            inode: 0x1_2345_6789,
        });
        assert_eq!(
            key.0,
            [0xff, b'D', b'I', 0, 0, 0, 0, 0, 0x01, 0x00, 0xd0, 0x0f, 0x89, 0x67, 0x45, 0x23]
        );
        assert!(key.is_file_id());
        assert_eq!(Key::from_hex(&key.to_hex()), Some(key));
    }

    #[test]
    fn build_id_form() {
        let short = Key::from_build_id(&[1, 2, 3]);
        assert_eq!(&short.0[..4], &[1, 2, 3, 0]);
        let long: Vec<u8> = (0..20).collect();
        assert_eq!(
            Key::from_build_id(&long).0.to_vec(),
            (0..16).collect::<Vec<u8>>()
        );
    }

    #[test]
    fn libc_has_a_build_id() {
        let Ok(data) = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6") else {
            return;
        };
        let id = build_id(&data).expect("Debian's libc has a build ID");
        assert_eq!(id.len(), 20);
    }
}
