//! Writing a response out once: the payload's JSON as the encoder wrote it spliced between the
//! own fields, and the token count spliced into the bytes it counts.

use std::ops::Range;

use envelope_core::TokensMethod;
use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use serde_json::{Map, Value, json};

use crate::encode::Whole;
use crate::stamps::{WIDEST_TOKENS, digits, sub_digits, token_fixed_point};
use crate::tokens::{Counts, Estimator};

/// The response's JSON with `whole` as its payload, stamped, when it fits `budget` as it is:
/// the own fields within half of it, everything within all of it, room kept for what
/// reconciling a cut would write (`reserve`, from
/// [`completeness_reserve`](crate::reconcile::completeness_reserve)). Written once: the token
/// count is spliced into the bytes it counts. `None` leaves `rest` for the ladder (with the
/// stamps it overwrites anyway).
pub(crate) fn write_fitting(
    rest: &mut Map<String, Value>,
    whole: &Whole,
    reserve: Counts,
    budget: usize,
    estimator: Estimator,
    method: Option<TokensMethod>,
) -> Option<String> {
    {
        let Some(Value::Object(meta)) = rest.get_mut(field::META) else {
            return None;
        };
        if let Some(method) = method {
            meta.insert(keys::TOKENS_METHOD.to_owned(), json!(method));
        }
        meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(0));
        meta.entry(keys::TRUNCATED).or_insert(json!(false));
    }
    let written = write_response(rest, Some(&whole.json));
    let (mut json, placeholder) = (written.json, written.tokens_estimated?);
    // The payload's bytes are counted already. The bytes around them count on their own:
    // JSON punctuation on both sides of each seam ends every run.
    let data = written.data.unwrap_or(0..0);
    let rest_counts = Counts::of_bytes(&json.as_bytes()[..data.start])
        + Counts::of_bytes(&json.as_bytes()[data.end..]);
    // Everything but the placeholder's one digit; then the widest count in its place.
    let base = sub_digits(rest_counts + whole.counts, 1);
    let widest = base + digits(WIDEST_TOKENS);
    let own = crate::size::sub(widest, whole.counts) + reserve;
    let fits = estimator.normalized_size(&own) <= (budget / 2) as u64
        && estimator.normalized_size(&(widest + reserve)) <= budget as u64;
    if !fits {
        return None;
    }
    let tokens = token_fixed_point(base, estimator, None);
    json.replace_range(placeholder, &tokens.to_string());
    if let Some(Value::Object(meta)) = rest.get_mut(field::META) {
        meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(tokens));
    }
    Some(json)
}

/// A response written out, and where two of its values sit in it.
pub(crate) struct Written {
    pub(crate) json: String,
    /// The payload's bytes.
    pub(crate) data: Option<Range<usize>>,
    /// The value of `meta.tokens_estimated`.
    pub(crate) tokens_estimated: Option<Range<usize>>,
}

/// `serde_json::to_string` of `rest` with a `data` member whose JSON is `data_json` (none when
/// `None`): members in the map's key order, `data` among them. Also where the payload and the
/// value of `meta.tokens_estimated` sit in it, so the count can be spliced in.
pub(crate) fn write_response(rest: &Map<String, Value>, data_json: Option<&str>) -> Written {
    fn separate(out: &mut Vec<u8>, first: usize) {
        if out.len() > first {
            out.push(b',');
        }
    }
    fn member(out: &mut Vec<u8>, first: usize, key: &str) {
        separate(out, first);
        // Writing JSON into a `Vec` cannot fail for a string.
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
    }
    let mut out = Vec::with_capacity(data_json.map_or(0, str::len) + 64 * rest.len() + 16);
    let mut placeholder = None;
    let mut data_range = None;
    let mut write_data = |out: &mut Vec<u8>, data: &str| {
        member(out, 1, field::DATA);
        data_range = Some(out.len()..out.len() + data.len());
        out.extend_from_slice(data.as_bytes());
    };
    out.push(b'{');
    let mut data_json = data_json;
    for (key, value) in rest {
        if key.as_str() > field::DATA
            && let Some(data) = data_json.take()
        {
            write_data(&mut out, data);
        }
        member(&mut out, 1, key);
        match value {
            Value::Object(meta) if key == field::META => {
                out.push(b'{');
                let first = out.len();
                for (key, value) in meta {
                    member(&mut out, first, key);
                    let start = out.len();
                    // Writing JSON into a `Vec` cannot fail for a `Value`: its keys are strings.
                    let _ = serde_json::to_writer(&mut out, value);
                    if key == keys::TOKENS_ESTIMATED {
                        placeholder = Some(start..out.len());
                    }
                }
                out.push(b'}');
            }
            value => {
                let _ = serde_json::to_writer(&mut out, value);
            }
        }
    }
    if let Some(data) = data_json {
        write_data(&mut out, data);
    }
    out.push(b'}');
    // Both parts are serde_json's UTF-8; the lossy conversion never changes them.
    let json = String::from_utf8(out)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    Written {
        json,
        data: data_range,
        tokens_estimated: placeholder,
    }
}
