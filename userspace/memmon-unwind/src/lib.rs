//! Unwind tables for the memmon module: DWARF CFI compiled into rows the kernel walks.
