//! Every supported shape of `#[tool]`, compiled with warnings denied: the
//! generated code adds none, and the doc comments survive (`missing_docs`).
#![deny(warnings, missing_docs)]

use std::io;

use serde::Serialize;
use tool_envelope::{tool, ErrorEnvelope, Found, Partial, ToolError, ToolResult};

/// A crate's own error.
#[derive(Debug, thiserror::Error, ToolError)]
pub enum AppError {
    /// Timed out.
    #[error("timed out")]
    #[tool_error(transient)]
    Timeout,
}

/// A crate's own `Result`.
pub type Result<T> = std::result::Result<T, AppError>;

/// Sync, free, `Result<T, E>`.
#[tool]
pub fn plain(a: u32, b: String) -> std::result::Result<u32, AppError> {
    let _ = b;
    Ok(a)
}

/// Async.
#[tool(idempotent)]
pub async fn asynchronous(a: u32) -> io::Result<u32> {
    Ok(a)
}

/// A crate's own alias.
#[tool(read_only, destructive = false, open_world = false)]
pub fn aliased(a: u32) -> Result<Found<u32>> {
    Ok(Found::from(Some(a)))
}

/// The envelope itself as the error.
#[tool(name = "enveloped.v2", title = "Enveloped", description = "Overrides the doc comment.")]
pub fn enveloped(a: u32) -> ToolResult<u32> {
    if a == 0 {
        return Err(ErrorEnvelope::validation("zero"));
    }
    Ok(a)
}

/// Generic, with a where clause and a lifetime.
#[tool]
pub fn generic<'a, T>(items: &'a [T], label: &'a str) -> std::result::Result<Option<&'a T>, AppError>
where
    T: Serialize,
{
    let _ = label;
    Ok(items.first())
}

/// `impl Trait` in argument position.
#[tool]
pub fn takes_impl(items: impl IntoIterator<Item = u32> + Serialize) -> io::Result<u32> {
    Ok(items.into_iter().sum())
}

/// Partial results, skip and redact, raw identifiers, `mut` bindings.
#[tool(skip(pool), redact(token))]
pub fn gathering(
    pool: &std::sync::Mutex<Vec<u8>>,
    /// The secret.
    token: String,
    mut r#type: String,
    found: Partial<u32>,
) -> io::Result<usize> {
    r#type.push('!');
    found.push(1);
    let _ = (pool, token);
    Ok(r#type.len())
}

/// Methods.
pub struct Service {
    calls: u32,
}

impl Service {
    /// `&self`.
    #[tool]
    pub fn get(&self, key: String) -> io::Result<u32> {
        let _ = key;
        Ok(self.calls)
    }

    /// `&mut self`.
    #[tool]
    pub fn bump(&mut self, by: u32) -> io::Result<u32> {
        self.calls += by;
        Ok(self.calls)
    }

    /// `self`, async.
    #[tool]
    pub async fn finish(self) -> io::Result<u32> {
        Ok(self.calls)
    }

    /// Calls another tool with `?`.
    #[tool]
    pub fn twice(&mut self, by: u32) -> ToolResult<u32> {
        self.bump(by)?;
        self.bump(by)
    }
}

fn main() {
    let _ = plain(1, String::new());
    let _ = asynchronous(1);
    let _ = aliased(1);
    let _ = enveloped(1);
    let _ = generic(&[1u8], "x");
    let _ = takes_impl(vec![1, 2]);
    let _ = gathering(&Default::default(), "t".into(), "k".into(), Partial::new());
    let mut service = Service { calls: 0 };
    let _ = service.get("k".into());
    let _ = service.bump(1);
    let _ = service.twice(1);
    let _ = service.finish();
}
