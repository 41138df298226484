//! Tool names in a `toolset!`: proven unique at compile time.

use crate::tool::{Tool, Toolset};

/// Room for the longest message [`name_clash`] writes: its text plus a 128-byte name.
const CLASH_CAPACITY: usize = 192;

/// The message `toolset!` fails to compile with when two of its tools share a name.
#[derive(Debug)]
pub struct NameClash {
    bytes: [u8; CLASH_CAPACITY],
    len: usize,
}

impl NameClash {
    /// The message, or `None` when every name is unique.
    pub const fn message(&self) -> Option<&str> {
        if self.len == 0 {
            return None;
        }
        match std::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(message) => Some(message),
            Err(_) => Some("two tools in this `toolset!` have the same name"),
        }
    }

    const fn push(&mut self, text: &str) {
        let text = text.as_bytes();
        let mut i = 0;
        while i < text.len() && self.len < CLASH_CAPACITY {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
    }
}

/// Finds the first name that appears twice. `toolset!` calls it in a `const` and panics with the
/// message, so a clash fails the build and names the tool.
pub const fn name_clash(names: &[&str]) -> NameClash {
    let mut clash = NameClash {
        bytes: [0; CLASH_CAPACITY],
        len: 0,
    };
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                clash.push("two tools in this `toolset!` are named `");
                clash.push(names[i]);
                clash.push("`");
                return clash;
            }
            j += 1;
        }
        i += 1;
    }
    clash
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Builds a toolset whose names `toolset!` has already proven unique.
pub fn toolset_of(tools: Vec<Box<dyn Tool>>) -> Toolset {
    match Toolset::new(tools) {
        Ok(toolset) => toolset,
        // `name_clash` ran at compile time on the same names.
        Err(error) => unreachable!("{error}"),
    }
}
