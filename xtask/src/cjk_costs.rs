//! `envelope-budget/src/tokens/cl100k_cjk.bin`: what `cl100k_base` makes of each CJK character
//! alone.
//!
//! `cargo run -p xtask --features exact -- cjk-costs` (`--check` compares). Two bits a
//! character, four characters a byte, low bits first: the tokens the character encodes to,
//! minus one. The ranges, in order, are `tokens::cjk_cost::RANGES`; the unit test
//! `cjk_cost_table_matches_cl100k` (with `--features exact`) checks the file against the
//! encoder.

use envelope_budget::ExactCounter;

use crate::codegen::{Mode, ensure_file_contents, workspace_root};

/// What regenerates the table.
pub(crate) const COMMAND: &str = "cargo run -p xtask --features exact -- cjk-costs";

/// Must equal `tokens::cjk_cost::RANGES`; the unit test catches any drift.
const RANGES: [(u32, u32); 4] = [
    (0x3000, 0x3100),
    (0x3400, 0xA000),
    (0xAC00, 0xD800),
    (0xFF00, 0xFFC0),
];

/// Writes (or checks) the table.
pub(crate) fn generate(mode: Mode) -> Result<(), String> {
    let counter = ExactCounter::cl100k();
    let mut table = Vec::new();
    let mut index = 0_usize;
    let mut histogram = [0_usize; 3];
    for (start, end) in RANGES {
        for code in start..end {
            let Some(c) = char::from_u32(code) else {
                return Err(format!("U+{code:04X} is no character: check RANGES"));
            };
            let extra = counter.count(c.encode_utf8(&mut [0; 4])).clamp(1, 3) - 1;
            histogram[extra] += 1;
            if index.is_multiple_of(4) {
                table.push(0_u8);
            }
            let last = table.len() - 1;
            table[last] |= (extra as u8) << (index % 4 * 2);
            index += 1;
        }
    }
    let path = workspace_root().join("envelope-budget/src/tokens/cl100k_cjk.bin");
    ensure_file_contents(&path, &table, mode, COMMAND)?;
    eprintln!(
        "{index} characters, {} bytes; 1/2/3 tokens: {histogram:?}",
        table.len()
    );
    Ok(())
}
