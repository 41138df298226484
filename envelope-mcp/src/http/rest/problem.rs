//! Answers as the gateway sends them: an envelope that is `ok` as `application/json`, any
//! other as an RFC 9457 `application/problem+json` body carrying the whole envelope.

use axum::response::{IntoResponse, Response};
use envelope_budget::{BudgetPolicy, Prepared, prepare};
use envelope_core::stage::{meta_stamp, stamp_request_id};
use envelope_core::{Category, Envelope, RequestId, ToolError, fields};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize as _;
use serde_json::Value;

use super::status::{GatewayStatus, category_status, problem_type};

/// The media type of every error answer.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The answer to a call: `200` with the envelope when it is `ok`; otherwise the status of its
/// error's category, as a problem.
pub(crate) fn answer(mut prepared: Prepared) -> Response {
    // Freeing the rows the trimmer cut can be slow; do it off the response path.
    let leftovers = std::mem::take(&mut prepared.leftovers);
    if !leftovers.is_empty() {
        tokio::task::spawn_blocking(move || drop(leftovers));
    }
    if prepared.structured[fields::envelope::OK] == true {
        let json = HeaderValue::from_static("application/json");
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, json)],
            prepared.json,
        )
            .into_response();
    }
    let error = &prepared.structured[fields::envelope::ERROR];
    // The envelope was built by this server: its category always parses.
    let category =
        Category::deserialize(&error[fields::error::CATEGORY]).unwrap_or(Category::Internal);
    let row = category_status(category);
    problem(row.status, row.title, category, prepared)
}

/// The answer to a request the gateway refuses itself, as `refused` says: a problem whose
/// envelope carries `message`, `refused`'s code and `data`, stamped with the request's id (a
/// ULID it sent, else a fresh one beside its own correlation id).
pub(crate) fn refusal(
    refused: GatewayStatus,
    message: impl Into<String>,
    data: Option<Value>,
    request_id: Option<&str>,
) -> Response {
    let mut error = ToolError::new(refused.category, message).with_code(refused.code);
    if let Some(data) = data {
        error = error.with_data(data);
    }
    let mut envelope: Envelope<Value> = Envelope::err(error);
    stamp_request_id(&mut envelope, RequestId::from_client(request_id));
    meta_stamp(&mut envelope).client_request_id(RequestId::client_correlation(request_id));
    let prepared = prepare(envelope, &BudgetPolicy::default().for_call(None));
    let title = category_status(refused.category).title;
    problem(refused.status, title, refused.category, prepared)
}

/// A problem: `type`, `title`, `status` and `detail` from the envelope, and the envelope
/// itself under `envelope`.
fn problem(status: u16, title: &str, category: Category, prepared: Prepared) -> Response {
    let error = &prepared.structured[fields::envelope::ERROR];
    let retry_after = (status == StatusCode::SERVICE_UNAVAILABLE.as_u16()).then(|| {
        // Whole seconds, rounded up; one second when the envelope names no wait.
        let millis = error[fields::error::RETRY_AFTER_MS]
            .as_u64()
            .unwrap_or(1_000);
        millis.div_ceil(1_000).max(1)
    });
    // The envelope goes in as the JSON it was prepared as, not written again.
    let body = format!(
        r#"{{"type":{},"title":{},"status":{status},"detail":{},"envelope":{}}}"#,
        Value::from(problem_type(category)),
        Value::from(title),
        error["message"],
        prepared.json,
    );
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))],
        body,
    )
        .into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
