//! The compile-fail and must-compile cases of `#[tool]` and `toolset!` live in `tests/`; this
//! library is empty.
