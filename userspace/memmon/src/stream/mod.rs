//! The event line format of docs/events.md: the typed events, their parser and its
//! number lexers, flags, errno names, escaped strings, and the two forms an event is
//! written in (the line form and the human-readable form, over one match of the kinds).

pub(crate) mod errno;
pub(crate) mod escaped;
pub(crate) mod event;
pub mod flags;
pub(crate) mod human;
pub(crate) mod lex;
pub(crate) mod line;
pub(crate) mod parse;
pub(crate) mod writer;
