//! TOON (Token-Oriented Object Notation) encoding of JSON values, `toon-spec: 4.4`.
//!
//! TOON carries the JSON data model in fewer tokens: objects by indentation instead of braces,
//! primitive arrays on one line, and arrays of uniform objects as tables that name their fields
//! once. This module only encodes, with the spec's default options: comma delimiter, two-space
//! indentation. It follows the [TOON specification] version 4.4 (Working Draft, 2026-10-08),
//! including nested field groups (§9.3) and the keyed tabular form (§9.5).
//!
//! Contract: [`encode`]'s stack use is bounded whatever its input. It measures the nesting
//! without recursion before it encodes anything, and refuses input that nests arrays and
//! objects more than [`MAX_DEPTH`] levels deep with [`ToonError::TooDeep`]; callers then fall
//! back to JSON. Everything after that check recurses at most [`MAX_DEPTH`] levels.
//!
//! Key order: TOON output lists object keys in the map's iteration order. This workspace builds
//! `serde_json` without `preserve_order`, so keys come out sorted.
//!
//! [TOON specification]: https://github.com/toon-format/spec/blob/main/SPEC.md

use std::fmt::{Display, Write as _};

use serde_json::{Map, Number, Value};

/// The version of the TOON specification this encoder implements.
pub const SPEC_VERSION: &str = "4.4";

/// The deepest nesting of arrays and objects [`encode`] accepts: a root array or object is at
/// level 1, its array and object children at level 2, and so on.
///
/// It matches `serde_json`'s own recursion limit for parsing (which accepts 127 levels), so any
/// value parsed from JSON text fits. At this depth the worst shapes (chains of nested field
/// groups) take up to 128 KiB of stack in a debug build and up to 64 KiB in a release build.
pub const MAX_DEPTH: usize = 128;

/// Spaces per indentation level (the spec's default `indentSize`).
const INDENT: usize = 2;

/// The document delimiter (the spec's default): declared by every header, splitting inline
/// arrays and rows, and quoted wherever it occurs in a string.
const DELIMITER: char = ',';

/// Why a value could not be encoded as TOON.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToonError {
    /// The value nests arrays and objects deeper than the encoder's limit.
    #[error("value nests arrays and objects deeper than {limit} levels")]
    TooDeep {
        /// The limit that was exceeded, [`MAX_DEPTH`].
        limit: usize,
    },
}

/// Encodes `value` as a TOON document.
///
/// The document has LF line endings and no trailing newline; an empty root object encodes as
/// the empty string. Object keys appear in the map's iteration order (sorted in this
/// workspace). Numbers keep their shortest round-trip digits, without an exponent for
/// magnitudes from 1e-6 to below 1e21, and `-0` becomes `0`.
///
/// # Errors
///
/// [`ToonError::TooDeep`] when arrays and objects nest more than [`MAX_DEPTH`] levels deep.
/// The check runs before any encoding and uses no recursion, so it is safe on hostile input.
///
/// ```
/// use serde_json::json;
///
/// let value = json!({
///     "tags": ["a", "b"],
///     "users": [{ "id": 1, "name": "Ada" }, { "id": 2, "name": "Bob" }],
/// });
/// let toon = envelope_budget::encode_toon(&value)?;
/// assert_eq!(toon, "tags[2]: a,b\nusers[2]{id,name}:\n  1,Ada\n  2,Bob");
/// # Ok::<(), envelope_budget::ToonError>(())
/// ```
pub fn encode(value: &Value) -> Result<String, ToonError> {
    check_depth(value)?;
    let mut encoder = Encoder {
        out: String::new(),
        started: false,
    };
    encoder.root(value);
    Ok(encoder.out)
}

/// Fails when arrays and objects in `value` nest deeper than [`MAX_DEPTH`]. Iterative, so it
/// is safe on any depth, and it stops at the first container past the limit.
fn check_depth<'a>(value: &'a Value) -> Result<(), ToonError> {
    // Each entry is a container and its level.
    let mut stack: Vec<(&'a Value, usize)> = Vec::new();
    if is_container(value) {
        stack.push((value, 1));
    }
    while let Some((container, level)) = stack.pop() {
        if level > MAX_DEPTH {
            return Err(ToonError::TooDeep { limit: MAX_DEPTH });
        }
        let child = |value: &'a Value| is_container(value).then_some((value, level + 1));
        match container {
            Value::Array(items) => stack.extend(items.iter().filter_map(child)),
            Value::Object(map) => stack.extend(map.values().filter_map(child)),
            _ => {}
        }
    }
    Ok(())
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}

fn is_primitive(value: &Value) -> bool {
    !is_container(value)
}

/// One entry of a tabular or keyed header's field list: a leaf field when `group` is empty,
/// otherwise a nested field group (§9.3), which the spec never allows to be empty.
struct Field<'a> {
    name: &'a str,
    group: Vec<Field<'a>>,
}

/// The field list under which `rows` encode as a table, or `None` when they do not qualify
/// (§9.3): every row is a non-empty object, all have the same key set, and every column is
/// either all primitives or all objects that qualify in turn (a nested field group). Fields
/// follow the first row's key order.
fn table_fields<'a>(rows: &[&'a Map<String, Value>]) -> Option<Vec<Field<'a>>> {
    let first = rows.first()?;
    if first.is_empty() {
        return None;
    }
    let same_keys = |row: &&Map<String, Value>| {
        row.len() == first.len() && first.keys().all(|key| row.contains_key(key))
    };
    if !rows.iter().all(same_keys) {
        return None;
    }
    let mut fields = Vec::with_capacity(first.len());
    for (name, head) in first.iter() {
        let group = match head {
            Value::Array(_) => return None,
            Value::Object(_) => {
                let column: Option<Vec<&Map<String, Value>>> = rows
                    .iter()
                    .map(|row| row.get(name).and_then(Value::as_object))
                    .collect();
                table_fields(&column?)?
            }
            _ => {
                if !rows
                    .iter()
                    .all(|row| row.get(name).is_some_and(is_primitive))
                {
                    return None;
                }
                Vec::new()
            }
        };
        fields.push(Field { name, group });
    }
    Some(fields)
}

/// An array in tabular form: its elements and their shared field list.
struct Table<'a> {
    rows: Vec<&'a Map<String, Value>>,
    fields: Vec<Field<'a>>,
}

/// The table an array makes when it qualifies for tabular form (§9.3).
fn array_table(items: &[Value]) -> Option<Table<'_>> {
    let rows: Vec<&Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    let fields = table_fields(&rows)?;
    Some(Table { rows, fields })
}

/// The field list of an object that qualifies for keyed tabular form (§9.5): at least two
/// entries, whose values qualify as the rows of a table.
fn keyed_table(map: &Map<String, Value>) -> Option<Vec<Field<'_>>> {
    if map.len() < 2 {
        return None;
    }
    let rows: Vec<&Map<String, Value>> =
        map.values().map(Value::as_object).collect::<Option<_>>()?;
    table_fields(&rows)
}

/// How a line begins.
#[derive(Clone, Copy)]
enum Lead {
    /// Plain indentation to this level.
    Indent(usize),
    /// Indentation to this level, then the list-item marker `- `.
    Hyphen(usize),
}

/// Writes one TOON document into `out`.
struct Encoder {
    out: String,
    /// Whether a line has been started, so the next one needs a line feed first.
    started: bool,
}

impl Encoder {
    fn root(&mut self, value: &Value) {
        match value {
            Value::Object(map) => match keyed_table(map) {
                Some(fields) => self.keyed(Lead::Indent(0), 0, None, map, &fields),
                // An empty root object writes no line at all: the empty document.
                None => self.fields(0, map),
            },
            Value::Array(items) => self.array(Lead::Indent(0), 0, None, items),
            _ => {
                self.start(Lead::Indent(0));
                self.primitive(value, true);
            }
        }
    }

    /// Starts a line; every line the encoder writes has content, so none is blank.
    fn start(&mut self, lead: Lead) {
        if self.started {
            self.out.push('\n');
        }
        self.started = true;
        let (level, hyphen) = match lead {
            Lead::Indent(level) => (level, false),
            Lead::Hyphen(level) => (level, true),
        };
        self.out.extend(std::iter::repeat_n(' ', level * INDENT));
        if hyphen {
            self.out.push_str("- ");
        }
    }

    fn display(&mut self, value: impl Display) {
        // Writing into a `String` cannot fail.
        let _ = write!(self.out, "{value}");
    }

    /// The fields of a non-keyed object, each on its own line at `depth`.
    fn fields(&mut self, depth: usize, map: &Map<String, Value>) {
        for (key, value) in map {
            self.field(Lead::Indent(depth), depth, key, value);
        }
    }

    /// One object field standing at `depth`; whatever it opens goes at `depth + 1`. `lead` is
    /// `Indent(depth)`, or `Hyphen(depth - 1)` for the first field of a list-item object (§10).
    fn field(&mut self, lead: Lead, depth: usize, key: &str, value: &Value) {
        match value {
            Value::Array(items) => self.array(lead, depth, Some(key), items),
            Value::Object(map) => match keyed_table(map) {
                Some(fields) => self.keyed(lead, depth, Some(key), map, &fields),
                None => {
                    // Also the whole encoding of an empty object: `key:` alone (§8).
                    self.start(lead);
                    self.key(key);
                    self.out.push(':');
                    self.fields(depth + 1, map);
                }
            },
            _ => {
                self.start(lead);
                self.key(key);
                self.out.push_str(": ");
                self.primitive(value, false);
            }
        }
    }

    /// An array in field or root position (`key` is `None` at the root): `key: []`, inline,
    /// tabular, or list form, in that order of preference (§9).
    fn array(&mut self, lead: Lead, depth: usize, key: Option<&str>, items: &[Value]) {
        self.start(lead);
        if items.is_empty() {
            if let Some(key) = key {
                self.key(key);
                self.out.push_str(": ");
            }
            self.out.push_str("[]");
        } else if items.iter().all(is_primitive) {
            self.header(key, items.len(), false, None);
            self.out.push(' ');
            self.inline(items);
        } else if let Some(table) = array_table(items) {
            self.header(key, items.len(), false, Some(&table.fields));
            for row in table.rows {
                self.start(Lead::Indent(depth + 1));
                self.cells(&table.fields, row, &mut true);
            }
        } else {
            self.header(key, items.len(), false, None);
            self.list_items(depth + 1, items);
        }
    }

    /// An object in keyed tabular form: the header, then one entry row per entry (§9.5).
    fn keyed(
        &mut self,
        lead: Lead,
        depth: usize,
        key: Option<&str>,
        map: &Map<String, Value>,
        fields: &[Field<'_>],
    ) {
        self.start(lead);
        self.header(key, map.len(), true, Some(fields));
        for (entry_key, entry) in map {
            self.start(Lead::Indent(depth + 1));
            self.key(entry_key);
            self.out.push_str(": ");
            if let Value::Object(entry) = entry {
                self.cells(fields, entry, &mut true);
            }
        }
    }

    /// The elements of an array in list form, one `- ` item each at `depth` (§9.2, §9.4, §10).
    fn list_items(&mut self, depth: usize, items: &[Value]) {
        for item in items {
            match item {
                Value::Array(inner) => {
                    self.start(Lead::Hyphen(depth));
                    // A keyless header in list-item position never takes tabular form, and an
                    // empty inner array stays `- [0]:` (§9.2, §9.4).
                    self.header(None, inner.len(), false, None);
                    if !inner.iter().all(is_primitive) {
                        self.list_items(depth + 1, inner);
                    } else if !inner.is_empty() {
                        self.out.push(' ');
                        self.inline(inner);
                    }
                }
                Value::Object(map) => {
                    let mut entries = map.iter();
                    match entries.next() {
                        None => {
                            self.start(Lead::Indent(depth));
                            self.out.push('-');
                        }
                        Some((key, value)) => {
                            // The first field rides on the hyphen line but stands one level
                            // deeper, like the fields after it (§10).
                            self.field(Lead::Hyphen(depth), depth + 1, key, value);
                            for (key, value) in entries {
                                self.field(Lead::Indent(depth + 1), depth + 1, key, value);
                            }
                        }
                    }
                }
                _ => {
                    self.start(Lead::Hyphen(depth));
                    self.primitive(item, false);
                }
            }
        }
    }

    /// `key[N]:`, `key[N]{fields}:` or, for keyed tabular form, `key[N:]{fields}:` (§6).
    fn header(&mut self, key: Option<&str>, len: usize, keyed: bool, fields: Option<&[Field<'_>]>) {
        if let Some(key) = key {
            self.key(key);
        }
        self.out.push('[');
        self.display(len);
        if keyed {
            self.out.push(':');
        }
        self.out.push(']');
        if let Some(fields) = fields {
            self.field_list(fields);
        }
        self.out.push(':');
    }

    fn field_list(&mut self, fields: &[Field<'_>]) {
        self.out.push('{');
        for (index, field) in fields.iter().enumerate() {
            if index > 0 {
                self.out.push(DELIMITER);
            }
            self.key(field.name);
            if !field.group.is_empty() {
                self.field_list(&field.group);
            }
        }
        self.out.push('}');
    }

    /// A row's cells: the primitive leaves of `row` in depth-first order of `fields` (§9.3).
    fn cells(&mut self, fields: &[Field<'_>], row: &Map<String, Value>, first: &mut bool) {
        for field in fields {
            let value = row.get(field.name);
            if field.group.is_empty() {
                if !*first {
                    self.out.push(DELIMITER);
                }
                *first = false;
                self.primitive(value.unwrap_or(&Value::Null), false);
            } else if let Some(Value::Object(group)) = value {
                self.cells(&field.group, group, first);
            }
        }
    }

    /// Primitive values joined by the delimiter (§9.1).
    fn inline(&mut self, items: &[Value]) {
        for (index, item) in items.iter().enumerate() {
            if index > 0 {
                self.out.push(DELIMITER);
            }
            self.primitive(item, false);
        }
    }

    /// A primitive value token; `root` marks the root primitive position, which also quotes a
    /// leading U+FEFF (§7.2).
    fn primitive(&mut self, value: &Value, root: bool) {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(true) => self.out.push_str("true"),
            Value::Bool(false) => self.out.push_str("false"),
            Value::Number(number) => self.number(number),
            Value::String(text) => {
                if needs_quotes(text) || (root && text.starts_with('\u{feff}')) {
                    self.quoted(text);
                } else {
                    self.out.push_str(text);
                }
            }
            // Callers pass only primitives; shape detection guarantees it.
            Value::Array(_) | Value::Object(_) => {
                debug_assert!(false, "containers are never encoded as primitives");
                self.out.push_str("null");
            }
        }
    }

    /// A number in canonical form (§2).
    fn number(&mut self, number: &Number) {
        if let Some(unsigned) = number.as_u64() {
            self.display(unsigned);
        } else if let Some(signed) = number.as_i64() {
            self.display(signed);
        } else if let Some(float) = number.as_f64() {
            self.float(float);
        } else {
            // Only reachable with serde_json's `arbitrary_precision`, for a number beyond f64:
            // the spec's lossless option, a quoted string of its JSON text.
            self.quoted(&number.to_string());
        }
    }

    fn float(&mut self, float: f64) {
        if !float.is_finite() {
            // NaN and infinities are not JSON; the spec maps them to null (§3).
            self.out.push_str("null");
        } else if float == 0.0 {
            // Also turns -0 into 0.
            self.out.push('0');
        } else if (1e-6..1e21).contains(&float.abs()) {
            // `Display` writes the shortest round-trip digits and never an exponent.
            self.display(float);
        } else {
            // Outside that range the spec allows JSON exponent notation, lowercase `e` with an
            // explicit sign; `LowerExp` writes the shortest digits but omits a `+`.
            let text = format!("{float:e}");
            match text.split_once('e') {
                Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                    self.out.push_str(mantissa);
                    self.out.push_str("e+");
                    self.out.push_str(exponent);
                }
                _ => self.out.push_str(&text),
            }
        }
    }

    /// An object key, entry key or field name: bare when it is an identifier, else quoted (§7.3).
    fn key(&mut self, key: &str) {
        if is_identifier(key) {
            self.out.push_str(key);
        } else {
            self.quoted(key);
        }
    }

    /// `text` in double quotes with the escapes of §7.1.
    fn quoted(&mut self, text: &str) {
        self.out.push('"');
        let mut clean = 0;
        for (index, byte) in text.bytes().enumerate() {
            let escape = match byte {
                b'\\' => "\\\\",
                b'"' => "\\\"",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x00..=0x1f => "",
                _ => continue,
            };
            self.out.push_str(&text[clean..index]);
            if escape.is_empty() {
                let _ = write!(self.out, "\\u{byte:04x}");
            } else {
                self.out.push_str(escape);
            }
            clean = index + 1;
        }
        self.out.push_str(&text[clean..]);
        self.out.push('"');
    }
}

/// Whether a string value must be quoted (§7.2), apart from the root-only U+FEFF rule.
fn needs_quotes(text: &str) -> bool {
    text.is_empty()
        || text.starts_with([' ', '\t', '-', '#'])
        || text.ends_with([' ', '\t'])
        || matches!(text, "true" | "false" | "null")
        || is_numeric_like(text)
        || text.bytes().any(|byte| {
            matches!(
                byte,
                b':' | b'"' | b'\\' | b'[' | b']' | b'{' | b'}' | 0x00..=0x1f
            ) || char::from(byte) == DELIMITER
        })
}

/// Whether `text` matches `/^[+-]?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?$/i` (§7.2): what a
/// decoder, or a reader, could take for a number.
fn is_numeric_like(text: &str) -> bool {
    fn digits(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count()
    }
    let mut rest = text.as_bytes();
    if let [b'+' | b'-', tail @ ..] = rest {
        rest = tail;
    }
    let whole = digits(rest);
    if whole == 0 {
        return false;
    }
    rest = &rest[whole..];
    if let [b'.', tail @ ..] = rest {
        let fraction = digits(tail);
        if fraction == 0 {
            return false;
        }
        rest = &tail[fraction..];
    }
    if let [b'e' | b'E', tail @ ..] = rest {
        let tail = match tail {
            [b'+' | b'-', signed @ ..] => signed,
            _ => tail,
        };
        let exponent = digits(tail);
        if exponent == 0 {
            return false;
        }
        rest = &tail[exponent..];
    }
    rest.is_empty()
}

/// Whether a key may stand unquoted: `/^[A-Za-z_][A-Za-z0-9_.]*$/` (§7.3).
fn is_identifier(key: &str) -> bool {
    match key.as_bytes() {
        [first, rest @ ..] if first.is_ascii_alphabetic() || *first == b'_' => rest
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.')),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::{MAX_DEPTH, ToonError, encode};
    use envelope_core::stage::drop_deep;

    // Expectations follow the spec's encode fixtures (tests/fixtures/encode in
    // toon-format/spec, version 4.4). `json!` builds maps with sorted keys in this workspace,
    // so where a fixture lists keys unsorted, the expectation here lists them sorted.

    #[track_caller]
    fn check(input: Value, expected: &str) {
        let encoded = encode(&input).expect("test values are shallow");
        assert_eq!(encoded, expected, "encoding {input}");
    }

    #[test]
    fn encodes_primitives() {
        check(json!("hello"), "hello");
        check(json!("Ada_99"), "Ada_99");
        check(json!(42), "42");
        check(json!(2.5), "2.5");
        check(json!(-7), "-7");
        check(json!(0), "0");
        check(json!(true), "true");
        check(json!(false), "false");
        check(json!(null), "null");
        check(json!(u64::MAX), "18446744073709551615");
        check(json!(i64::MIN), "-9223372036854775808");
    }

    #[test]
    fn formats_numbers_canonically() {
        check(json!(-0.0), "0");
        check(json!(1.0), "1");
        check(json!(1.5000), "1.5");
        check(json!(1e6), "1000000");
        check(json!(0.000001), "0.000001");
        check(json!(1e20), "100000000000000000000");
        check(json!(9007199254740991_u64), "9007199254740991");
        check(json!(123456789012345680000.0), "123456789012345680000");
        check(
            json!([0.3333333333333333, 0.30000000000000004, -0.000001]),
            "[3]: 0.3333333333333333,0.30000000000000004,-0.000001",
        );
        // Outside [1e-6, 1e21) the spec allows JSON exponent form with an explicit sign.
        check(json!(1e21), "1e+21");
        check(json!(-1.5e300), "-1.5e+300");
        check(json!(1e-7), "1e-7");
        check(json!(5e-324), "5e-324");
        // NaN is not JSON: `json!` already makes it null.
        check(json!(f64::NAN), "null");
    }

    #[test]
    fn quotes_strings_that_need_it() {
        // The cases the brief lists, then the spec's fixtures.
        check(json!(""), r#""""#);
        check(json!(" a"), r#"" a""#);
        check(json!("a "), r#""a ""#);
        check(json!("\tx"), r#""\tx""#);
        check(json!("true"), r#""true""#);
        check(json!("false"), r#""false""#);
        check(json!("null"), r#""null""#);
        check(json!("42"), r#""42""#);
        check(json!("3.14"), r#""3.14""#);
        check(json!("1e-6"), r#""1e-6""#);
        check(json!("1E+6"), r#""1E+6""#);
        check(json!("05"), r#""05""#);
        check(json!("+1"), r#""+1""#);
        check(json!("a,b"), r#""a,b""#);
        check(json!("a:b"), r#""a:b""#);
        check(json!("-x"), r#""-x""#);
        check(json!("-"), r#""-""#);
        check(json!("- item"), r#""- item""#);
        check(json!("#hello"), r##""#hello""##);
        check(json!("[x"), r#""[x""#);
        check(json!("a[test]"), r#""a[test]""#);
        check(json!("{key}"), r#""{key}""#);
        check(json!("say \"hi\""), r#""say \"hi\"""#);
        check(json!("Users\\path"), r#""Users\\path""#);
        check(json!("a,🚀"), "\"a,🚀\"");
        // A root string starting with a byte-order mark is quoted; elsewhere it is content.
        check(json!("\u{feff}8"), "\"\u{feff}8\"");
        check(json!({ "k": "\u{feff}x" }), "k: \u{feff}x");
    }

    #[test]
    fn leaves_safe_strings_bare() {
        check(json!("café"), "café");
        check(json!("hello 👋 world"), "hello 👋 world");
        check(json!("名前"), "名前");
        check(json!("a-b #c"), "a-b #c");
        check(
            json!({ "a": ".5", "b": "NaN", "c": "True" }),
            "a: .5\nb: NaN\nc: True",
        );
        check(json!("1."), "1.");
        check(json!("1e"), "1e");
        check(json!("a|b"), "a|b");
    }

    #[test]
    fn escapes_newlines_and_controls() {
        check(
            json!(["line1\nline2", "tab\there", "return\rcarriage"]),
            r#"[3]: "line1\nline2","tab\there","return\rcarriage""#,
        );
        // Other C0 controls use lowercase `\uXXXX`; DEL, U+0085 and U+2028 stay literal.
        check(
            json!({ "val": "a\u{4}\u{8}\u{c}b", "sep": "a:\u{7f}\u{85}\u{2028}b" }),
            "sep: \"a:\u{7f}\u{85}\u{2028}b\"\nval: \"a\\u0004\\u0008\\u000cb\"",
        );
        check(json!("\u{1f}"), r#""\u001f""#);
        // A combining mark after a syntax character does not hide it (§1.2).
        check(
            json!({ "items": ["a,\u{301}b", "-\u{301}", "#\u{301}"], "k": "x:\u{301}" }),
            "items[3]: \"a,\u{301}b\",\"-\u{301}\",\"#\u{301}\"\nk: \"x:\u{301}\"",
        );
    }

    #[test]
    fn encodes_objects_and_keys() {
        check(
            json!({ "id": 123, "name": "Ada", "active": true }),
            "active: true\nid: 123\nname: Ada",
        );
        check(json!({ "id": 123, "value": null }), "id: 123\nvalue: null");
        check(json!({}), "");
        check(
            json!({ "a": { "b": { "c": "deep" } } }),
            "a:\n  b:\n    c: deep",
        );
        check(json!({ "user": {} }), "user:");
        check(json!({ "": { "a": 1 } }), "\"\":\n  a: 1");
        check(json!({ "note": "a:b" }), r#"note: "a:b""#);
        check(json!({ "text": " padded " }), r#"text: " padded ""#);
        check(json!({ "user.name": 1, "_x": 2 }), "_x: 2\nuser.name: 1");
        check(
            json!({ "__proto__": "polluted", "safe": true }),
            "__proto__: polluted\nsafe: true",
        );
        for (key, expected) in [
            ("order:id", r#""order:id": 7"#),
            ("[index]", r#""[index]": 7"#),
            ("{key}", r#""{key}": 7"#),
            ("a,b", r#""a,b": 7"#),
            ("full name", r#""full name": 7"#),
            ("-lead", r#""-lead": 7"#),
            (" a ", r#"" a ": 7"#),
            ("123", r#""123": 7"#),
            ("", r#""": 7"#),
            ("café", r#""café": 7"#),
            ("名前", r#""名前": 7"#),
            ("line\nbreak", r#""line\nbreak": 7"#),
            ("tab\there", r#""tab\there": 7"#),
            ("he said \"hi\"", r#""he said \"hi\"": 7"#),
            ("a\u{4}b", r#""a\u0004b": 7"#),
        ] {
            check(json!({ key: 7 }), expected);
        }
    }

    #[test]
    fn encodes_primitive_arrays_inline() {
        check(
            json!({ "tags": ["reading", "gaming"] }),
            "tags[2]: reading,gaming",
        );
        check(json!({ "nums": [1, 2, 3] }), "nums[3]: 1,2,3");
        check(
            json!({ "data": ["x", "y", true, 10, null] }),
            "data[5]: x,y,true,10,null",
        );
        check(json!({ "": [1, 2, 3] }), "\"\"[3]: 1,2,3");
        check(json!({ "items": [""] }), r#"items[1]: """#);
        check(json!({ "items": ["a", "", "b"] }), r#"items[3]: a,"",b"#);
        check(json!({ "items": [" ", "  "] }), r#"items[2]: " ","  ""#);
        check(
            json!({ "items": ["a", "b,c", "d:e"] }),
            r#"items[3]: a,"b,c","d:e""#,
        );
        check(
            json!({ "items": ["x", "true", "42", "-3.14"] }),
            r#"items[4]: x,"true","42","-3.14""#,
        );
        check(
            json!({ "items": ["[5]", "- item", "{key}"] }),
            r#"items[3]: "[5]","- item","{key}""#,
        );
        check(json!({ "tags": ["🎉", "🎊", "🎈"] }), "tags[3]: 🎉,🎊,🎈");
        check(
            json!(["x", "y", "true", true, 10]),
            r#"[5]: x,y,"true",true,10"#,
        );
    }

    #[test]
    fn encodes_empty_arrays() {
        check(json!({ "items": [] }), "items: []");
        check(json!({ "": [] }), "\"\": []");
        check(json!([]), "[]");
        check(
            json!({ "pairs": [[], []] }),
            "pairs[2]:\n  - [0]:\n  - [0]:",
        );
        check(json!([[1, 2], []]), "[2]:\n  - [2]: 1,2\n  - [0]:");
    }

    #[test]
    fn encodes_arrays_of_arrays() {
        check(
            json!({ "pairs": [["a", "b"], ["c", "d"]] }),
            "pairs[2]:\n  - [2]: a,b\n  - [2]: c,d",
        );
        check(
            json!({ "pairs": [["a", "b"], ["c,d", "e:f", "true"]] }),
            "pairs[2]:\n  - [2]: a,b\n  - [3]: \"c,d\",\"e:f\",\"true\"",
        );
        check(
            json!({ "pairs": [[1], [2, 3]] }),
            "pairs[2]:\n  - [1]: 1\n  - [2]: 2,3",
        );
        check(json!([[[1]]]), "[1]:\n  - [1]:\n    - [1]: 1");
        // A tabular-eligible array in list-item position takes list form (§9.4).
        check(
            json!({ "a": [[{ "x": 1 }, { "x": 2 }]] }),
            "a[1]:\n  - [2]:\n    - x: 1\n    - x: 2",
        );
        check(
            json!({ "a": [[1, { "x": 1 }], 2] }),
            "a[2]:\n  - [2]:\n    - 1\n    - x: 1\n  - 2",
        );
    }

    #[test]
    fn encodes_tabular_arrays() {
        check(
            json!({ "items": [{ "sku": "A1", "qty": 2, "price": 9.99 }, { "sku": "B2", "qty": 1, "price": 14.5 }] }),
            "items[2]{price,qty,sku}:\n  9.99,2,A1\n  14.5,1,B2",
        );
        check(
            json!({ "items": [{ "id": 1, "value": null }, { "id": 2, "value": "test" }] }),
            "items[2]{id,value}:\n  1,null\n  2,test",
        );
        check(
            json!({ "items": [{ "sku": "A,1", "desc": "cool", "qty": 2 }, { "sku": "B2", "desc": "wip: test", "qty": 1 }] }),
            "items[2]{desc,qty,sku}:\n  cool,2,\"A,1\"\n  \"wip: test\",1,B2",
        );
        check(
            json!({ "items": [{ "id": 1, "status": "true" }, { "id": 2, "status": "false" }] }),
            "items[2]{id,status}:\n  1,\"true\"\n  2,\"false\"",
        );
        check(
            json!({ "items": [{ "order:id": 1, "full name": "Ada" }, { "order:id": 2, "full name": "Bob" }] }),
            "items[2]{\"full name\",\"order:id\"}:\n  Ada,1\n  Bob,2",
        );
        check(
            json!({ "": [{ "id": 1, "name": "Ada" }, { "id": 2, "name": "Bob" }] }),
            "\"\"[2]{id,name}:\n  1,Ada\n  2,Bob",
        );
        check(
            json!({ "items": [{ "tag": "#a" }, { "tag": "b" }] }),
            "items[2]{tag}:\n  \"#a\"\n  b",
        );
        check(json!([{ "id": 1 }, { "id": 2 }]), "[2]{id}:\n  1\n  2");
    }

    #[test]
    fn collapses_uniform_nested_objects_into_field_groups() {
        check(
            json!({ "orders": [
                { "id": 1, "customer": { "name": "Alice", "country": "DK" }, "total": 99 },
                { "id": 2, "customer": { "name": "Bob", "country": "UK" }, "total": 149 },
            ] }),
            "orders[2]{customer{country,name},id,total}:\n  DK,Alice,1,99\n  UK,Bob,2,149",
        );
        check(
            json!({ "items": [
                { "id": 1, "geo": { "point": { "lat": 1.5, "lon": 2.5 } } },
                { "id": 2, "geo": { "point": { "lat": 3, "lon": 4 } } },
            ] }),
            "items[2]{geo{point{lat,lon}},id}:\n  1.5,2.5,1\n  3,4,2",
        );
        check(
            json!({ "items": [{ "id": 1, "customer": { "full name": "Ada", "country": "UK" } }] }),
            "items[1]{customer{country,\"full name\"},id}:\n  UK,Ada,1",
        );
        // A keyed-eligible object in a column is a nested field group, not a keyed table.
        check(
            json!({ "a": [{ "t": { "p": { "x": 1 }, "q": { "x": 2 } }, "other": 9 }] }),
            "a[1]{other,t{p{x},q{x}}}:\n  9,1,2",
        );
    }

    #[test]
    fn falls_back_to_list_form() {
        // Differing keys.
        check(
            json!({ "items": [{ "id": 1, "name": "First" }, { "id": 2, "name": "Second", "extra": true }] }),
            "items[2]:\n  - id: 1\n    name: First\n  - extra: true\n    id: 2\n    name: Second",
        );
        // A nested column with differing key sets.
        check(
            json!({ "entries": [{ "id": 1, "meta": { "a": 1 } }, { "id": 2, "meta": { "b": 2 } }] }),
            "entries[2]:\n  - id: 1\n    meta:\n      a: 1\n  - id: 2\n    meta:\n      b: 2",
        );
        // A column mixing null and objects.
        check(
            json!({ "orders": [{ "id": 1, "customer": { "name": "Alice" } }, { "id": 2, "customer": null }] }),
            "orders[2]:\n  - customer:\n      name: Alice\n    id: 1\n  - customer: null\n    id: 2",
        );
        // A nested object holding an array.
        check(
            json!({ "orders": [{ "id": 1, "customer": { "name": "Alice", "tags": ["x"] } }] }),
            "orders[1]:\n  - customer:\n      name: Alice\n      tags[1]: x\n    id: 1",
        );
        // Empty objects, nested or as elements.
        check(
            json!({ "items": [{ "id": 1, "meta": {} }] }),
            "items[1]:\n  - id: 1\n    meta:",
        );
        check(json!({ "items": [{}, {}] }), "items[2]:\n  -\n  -");
        // Mixed elements.
        check(
            json!({ "items": [1, { "a": 1 }, "text"] }),
            "items[3]:\n  - 1\n  - a: 1\n  - text",
        );
        check(
            json!({ "items": [{ "a": 1 }, [1, 2]] }),
            "items[2]:\n  - a: 1\n  - [2]: 1,2",
        );
        check(
            json!({ "items": ["#x", { "a": 1 }] }),
            "items[2]:\n  - \"#x\"\n  - a: 1",
        );
        check(
            json!({ "items": ["first", "second", {}] }),
            "items[3]:\n  - first\n  - second\n  -",
        );
        check(
            json!(["summary", { "id": 1, "name": "Ada" }, [{ "id": 2 }, { "status": "draft" }]]),
            "[3]:\n  - summary\n  - id: 1\n    name: Ada\n  - [2]:\n    - id: 2\n    - status: draft",
        );
    }

    #[test]
    fn puts_a_list_item_objects_first_field_on_the_hyphen_line() {
        check(
            json!({ "items": [{ "nums": [1, 2, 3], "name": "Ada" }] }),
            "items[1]:\n  - name: Ada\n    nums[3]: 1,2,3",
        );
        check(
            json!({ "items": [{ "matrix": [[1, 2], [3, 4]], "name": "grid" }] }),
            "items[1]:\n  - matrix[2]:\n      - [2]: 1,2\n      - [2]: 3,4\n    name: grid",
        );
        check(
            json!({ "items": [{ "users": [{ "id": 1, "name": "Ada" }, { "id": 2, "name": "Bob" }], "zstatus": "active" }] }),
            "items[1]:\n  - users[2]{id,name}:\n      1,Ada\n      2,Bob\n    zstatus: active",
        );
        check(
            json!({ "items": [{ "users": [{ "id": 1, "name": "Ada" }, { "id": 2 }], "zstatus": "active" }] }),
            "items[1]:\n  - users[2]:\n      - id: 1\n        name: Ada\n      - id: 2\n    zstatus: active",
        );
        check(
            json!({ "items": [{ "data": [], "name": "x" }] }),
            "items[1]:\n  - data: []\n    name: x",
        );
        check(
            json!({ "items": [{ "a": {}, "b": 1 }] }),
            "items[1]:\n  - a:\n    b: 1",
        );
        check(
            json!({ "items": [{ "a": { "x": 1 }, "b": [1] }] }),
            "items[1]:\n  - a:\n      x: 1\n    b[1]: 1",
        );
    }

    #[test]
    fn encodes_objects_of_uniform_objects_as_keyed_tables() {
        check(
            json!({ "servers": {
                "alpha": { "host": "a.example.com", "port": 8080 },
                "beta": { "host": "b.example.com", "port": 9090 },
            } }),
            "servers[2:]{host,port}:\n  alpha: a.example.com,8080\n  beta: b.example.com,9090",
        );
        check(
            json!({ "alice": { "age": 30, "city": "Berlin" }, "bob": { "age": 25, "city": "Oslo" } }),
            "[2:]{age,city}:\n  alice: 30,Berlin\n  bob: 25,Oslo",
        );
        check(
            json!({ "regions": {
                "eu": { "name": "Europe", "geo": { "lat": 50, "lon": 10 } },
                "us": { "name": "America", "geo": { "lat": 40, "lon": -100 } },
            } }),
            "regions[2:]{geo{lat,lon},name}:\n  eu: 50,10,Europe\n  us: 40,-100,America",
        );
        check(
            json!({ "ids": { "42": { "v": 1 }, "my key": { "v": 2 } } }),
            "ids[2:]{v}:\n  \"42\": 1\n  \"my key\": 2",
        );
        check(
            json!({ "notes": { "n1": { "text": "a,b" }, "n2": { "text": "c" } } }),
            "notes[2:]{text}:\n  n1: \"a,b\"\n  n2: c",
        );
        // What does not qualify stays nested.
        check(
            json!({ "config": { "only": { "a": 1, "b": 2 } } }),
            "config:\n  only:\n    a: 1\n    b: 2",
        );
        check(
            json!({ "envs": { "dev": { "host": "x" }, "prod": { "host": "y", "port": 1 } } }),
            "envs:\n  dev:\n    host: x\n  prod:\n    host: y\n    port: 1",
        );
        check(
            json!({ "m": { "a": { "x": 1 }, "b": 2 } }),
            "m:\n  a:\n    x: 1\n  b: 2",
        );
        check(
            json!({ "m": { "a": { "tags": ["x"] }, "b": { "tags": ["y"] } } }),
            "m:\n  a:\n    tags[1]: x\n  b:\n    tags[1]: y",
        );
        // On a hyphen line, and never for an anonymous array element.
        check(
            json!({ "items": [{ "config": { "a": { "x": 1 }, "b": { "x": 2 } }, "status": "ok" }, { "status": "down" }] }),
            "items[2]:\n  - config[2:]{x}:\n      a: 1\n      b: 2\n    status: ok\n  - status: down",
        );
        check(
            json!({ "items": [{ "a": { "x": 1 }, "b": { "x": 2 } }, 5] }),
            "items[2]:\n  - a:\n      x: 1\n    b:\n      x: 2\n  - 5",
        );
    }

    #[test]
    fn encodes_the_spec_edge_cases() {
        check(
            json!({ "root": { "level1": { "level2": { "level3": { "items": [{ "id": 1, "val": "a" }, { "id": 2, "val": "b" }] } } } } }),
            "root:\n  level1:\n    level2:\n      level3:\n        items[2]{id,val}:\n          1,a\n          2,b",
        );
        check(
            json!({ "user": { "id": 123, "name": "Ada", "tags": ["reading", "gaming"], "active": true, "prefs": [] } }),
            "user:\n  active: true\n  id: 123\n  name: Ada\n  prefs: []\n  tags[2]: reading,gaming",
        );
        check(
            json!({ "message": "Hello 世界 👋" }),
            "message: Hello 世界 👋",
        );
        check(
            json!({ "user": { "id": 123, "name": "Ada" }, "items": ["a", "b"] }),
            "items[2]: a,b\nuser:\n  id: 123\n  name: Ada",
        );
    }

    /// Alternates arrays and objects `depth` levels deep, without recursion.
    fn nested(depth: usize) -> Value {
        let mut value = json!("leaf");
        for level in 0..depth {
            value = if level % 2 == 0 {
                Value::Array(vec![value])
            } else {
                let mut map = Map::new();
                map.insert("k".to_owned(), value);
                Value::Object(map)
            };
        }
        value
    }

    /// Runs `job` on a thread with a 256 KiB stack, where unbounded recursion would overflow.
    fn on_small_stack<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(job)
            .expect("spawning a thread works in tests")
            .join()
            .expect("the job does not panic")
    }

    #[test]
    fn refuses_hostile_depth_without_overflowing_the_stack() {
        let value = nested(100_000);
        let result = on_small_stack(move || {
            let result = encode(&value);
            drop_deep(value);
            result
        });
        assert!(
            matches!(result, Err(ToonError::TooDeep { limit: MAX_DEPTH })),
            "{result:?}"
        );
    }

    #[test]
    fn encodes_up_to_the_depth_limit_on_a_small_stack() {
        let at_limit = nested(MAX_DEPTH);
        let past_limit = nested(MAX_DEPTH + 1);
        let (at, past) = on_small_stack(move || (encode(&at_limit), encode(&past_limit)));
        let at = at.expect("the limit itself is accepted");
        // Each one-object array is a list whose item carries the next field on its hyphen line.
        let lines: Vec<&str> = at.lines().collect();
        assert_eq!(lines[..3], ["k[1]:", "  - k[1]:", "      - k[1]:"]);
        assert_eq!(lines.len(), MAX_DEPTH / 2);
        assert_eq!(
            lines.last().map(|line| line.trim_start()),
            Some("- k[1]: leaf")
        );
        assert!(
            matches!(past, Err(ToonError::TooDeep { limit: MAX_DEPTH })),
            "{past:?}"
        );
        // A wide value is not deep.
        let wide = Value::Array((0..10_000).map(|n| json!({ "n": n })).collect());
        assert!(encode(&wide).is_ok());
    }

    #[test]
    fn every_shape_at_the_depth_limit_fits_a_small_stack() {
        fn wrap(key: &str, value: Value) -> Value {
            let mut map = Map::new();
            map.insert(key.to_owned(), value);
            Value::Object(map)
        }
        let chain = |levels: usize| (0..levels).fold(json!(1), |value, _| wrap("a", value));
        let shapes = [
            // Nested objects: one `field` frame per level.
            chain(MAX_DEPTH),
            // Nested arrays in list form: one `list_items` frame per level.
            (0..MAX_DEPTH).fold(json!(1), |value, _| Value::Array(vec![value, json!(0)])),
            // Nested field groups in a table, the deepest frames per level.
            Value::Array(vec![chain(MAX_DEPTH - 1), chain(MAX_DEPTH - 1)]),
            // The same in keyed tabular form.
            json!({ "x": chain(MAX_DEPTH - 1), "y": chain(MAX_DEPTH - 1) }),
        ];
        let results = on_small_stack(move || shapes.iter().map(encode).collect::<Vec<_>>());
        for result in results {
            result.expect("the limit itself is accepted");
        }
        let mut expected_header = "[2]{".to_owned();
        expected_header.push_str(&"a{".repeat(MAX_DEPTH - 2));
        expected_header.push('a');
        expected_header.push_str(&"}".repeat(MAX_DEPTH - 1));
        expected_header.push(':');
        let table = encode(&Value::Array(vec![
            chain(MAX_DEPTH - 1),
            chain(MAX_DEPTH - 1),
        ]))
        .expect("the limit itself is accepted");
        assert_eq!(table, format!("{expected_header}\n  1\n  1"));
    }

    #[test]
    fn encodes_a_typical_envelope() {
        use envelope_core::{Completeness, Envelope, TruncationReason, Unit};

        let page = Completeness::truncated_page(
            Unit::FILE,
            2,
            Some(512),
            TruncationReason::PageLimit,
            None,
        )
        .expect("2 of 512 is a valid page");
        let envelope = Envelope::ok(json!({
            "files": [
                { "path": "src/lib.rs", "lines": 120, "lang": "rust" },
                { "path": "src/toon.rs", "lines": 640, "lang": "rust" },
            ],
        }))
        .with_completeness(page);
        let mut value = serde_json::to_value(&envelope).expect("envelopes serialize");
        // The request id is fresh on every run; pin it so the expectation is stable.
        value["meta"]["request_id"] = json!("01J0000000000000000000TEST");
        // The same envelope as JSON, for comparison:
        // {"completeness":{"complete":false,"returned":2,"total":512,"truncated":true,
        //  "truncation_reasons":["page_limit"],"unit":"file"},"data":{"files":[{"lang":"rust",
        //  "lines":120,"path":"src/lib.rs"},{"lang":"rust","lines":640,"path":"src/toon.rs"}]},
        //  "meta":{"request_id":"01J0000000000000000000TEST","schema_version":3},
        //  "next_step":"showing 2 of 512 files — raise the limit or narrow the query",
        //  "ok":true,"verdict":"INFO"}
        let expected = "\
completeness:
  complete: false
  returned: 2
  total: 512
  truncated: true
  truncation_reasons[1]: page_limit
  unit: file
data:
  files[2]{lang,lines,path}:
    rust,120,src/lib.rs
    rust,640,src/toon.rs
meta:
  request_id: 01J0000000000000000000TEST
  schema_version: 3
next_step: showing 2 of 512 files — raise the limit or narrow the query
ok: true
verdict: INFO";
        check(value, expected);
    }
}
