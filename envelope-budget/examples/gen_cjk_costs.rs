//! Writes `src/tokens/cl100k_cjk.bin`, what `cl100k_base` makes of each CJK character alone.
//!
//! `cargo run -p envelope-budget --features exact --example gen_cjk_costs`. Two bits a
//! character, four characters a byte, low bits first: the tokens the character encodes to,
//! minus one. The ranges, in order, are `tokens::cjk_cost::RANGES`; the unit test
//! `cjk_cost_table_matches_cl100k` (with `--features exact`) checks the file against the
//! encoder.

use std::path::Path;

use envelope_budget::ExactCounter;

/// Must equal `tokens::cjk_cost::RANGES`; the unit test catches any drift.
const RANGES: [(u32, u32); 4] = [
    (0x3000, 0x3100),
    (0x3400, 0xA000),
    (0xAC00, 0xD800),
    (0xFF00, 0xFFC0),
];

fn main() -> std::io::Result<()> {
    let counter = ExactCounter::cl100k();
    let mut table = Vec::new();
    let mut index = 0_usize;
    let mut histogram = [0_usize; 3];
    for (start, end) in RANGES {
        for code in start..end {
            let c = char::from_u32(code).expect("no surrogates below U+D800");
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
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tokens/cl100k_cjk.bin");
    std::fs::write(&path, &table)?;
    println!(
        "{}: {index} characters, {} bytes; 1/2/3 tokens: {histogram:?}",
        path.display(),
        table.len()
    );
    Ok(())
}
