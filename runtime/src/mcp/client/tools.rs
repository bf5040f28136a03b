//! A server's tools, as its `tools/list` describes them: listed once per
//! session, within the client's timeout, and within bounds a hostile
//! server cannot move — a repeated cursor, a cursor longer than any server
//! writes, or more pages, tools or bytes than any server has, ends the
//! listing with what it gathered.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};

use crate::envelope::ErrorEnvelope;
use crate::limits::json_len;
use crate::mcp::client::failure;
use crate::mcp::definition::ToolHints;
use crate::reasons;
use crate::redact::schema::{SecretPaths, says_nothing_of_secrets};

/// The most pages of one `tools/list` the client asks for.
pub(crate) const MAX_PAGES: usize = 100;

/// The most tools the client keeps of one server.
pub(crate) const MAX_TOOLS: usize = 10_000;

/// The most bytes of tools the client keeps of one server: names,
/// descriptions and schemas, as JSON.
pub(crate) const MAX_BYTES: usize = 16 * 1024 * 1024;

/// The longest cursor the client sends back.
pub(crate) const MAX_CURSOR: usize = 4 * 1024;

/// A tool of a remote server, as its `tools/list` describes it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteTool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Its annotations, MCP's defaults where the server gave none
    /// (`readOnlyHint` false, `destructiveHint` true, `idempotentHint`
    /// false, `openWorldHint` true).
    pub annotations: ToolHints,
    /// JSON Schema of its arguments.
    pub input_schema: Map<String, Value>,
    /// JSON Schema of its structured content, if it declares one.
    pub output_schema: Option<Map<String, Value>>,
    /// How it can fail, when its server publishes it
    /// (`_meta["tool-envelope/failureModes"]`).
    pub failure_modes: Option<Value>,
    /// Where its arguments hold secrets; nowhere known when its schema lists
    /// no properties.
    secrets: Arc<SecretPaths>,
}

impl RemoteTool {
    fn from_rmcp(tool: &Tool) -> Self {
        let annotations = tool.annotations.as_ref();
        let hint = |read: fn(&rmcp::model::ToolAnnotations) -> Option<bool>, default: bool| {
            annotations.and_then(read).unwrap_or(default)
        };
        let input_schema = (*tool.input_schema).clone();
        RemoteTool {
            name: tool.name.to_string(),
            description: tool
                .description
                .as_ref()
                .map(std::string::ToString::to_string),
            annotations: ToolHints {
                read_only_hint: hint(|a| a.read_only_hint, false),
                destructive_hint: hint(|a| a.destructive_hint, true),
                idempotent_hint: hint(|a| a.idempotent_hint, false),
                open_world_hint: hint(|a| a.open_world_hint, true),
            },
            // A schema of annotations alone says nothing of secrets; any
            // other (properties, a `$ref` or combinator, a schema for the
            // keys it does not name…) is read, and what it does not
            // declare is hidden (what it says of it is unknown).
            secrets: Arc::new(match says_nothing_of_secrets(&input_schema) {
                true => SecretPaths::OPEN,
                false => SecretPaths::from_schema(&input_schema, &[]).of_remote_tool(),
            }),
            input_schema,
            output_schema: tool.output_schema.as_ref().map(|schema| (**schema).clone()),
            failure_modes: tool.meta.as_ref().and_then(|meta| {
                meta.0
                    .get(crate::mcp::definition::FAILURE_MODES_META_KEY)
                    .cloned()
            }),
        }
    }

    /// Whether repeating a call of this tool is safe, as its annotations say:
    /// it is read-only or idempotent.
    pub fn is_safe_to_repeat(&self) -> bool {
        self.annotations.read_only_hint || self.annotations.idempotent_hint
    }

    /// Where its arguments hold secrets.
    pub(crate) fn secrets(&self) -> &SecretPaths {
        &self.secrets
    }

    /// About how many bytes the client holds for it: its texts and schemas
    /// as JSON.
    fn size(&self) -> usize {
        self.name.len()
            + self.description.as_ref().map_or(0, String::len)
            + json_len(&self.input_schema)
            + self.output_schema.as_ref().map_or(0, json_len)
            + self.failure_modes.as_ref().map_or(0, json_len)
    }
}

/// A server's tools by name, each shared with the calls that use it.
pub(crate) type Catalog = HashMap<String, Arc<RemoteTool>>;

/// How long a listing the server says is fresh for less (`ttlMs`, 0
/// included) is kept all the same: a server cannot make every call list
/// its tools again.
pub(crate) const LEAST_FRESH: Duration = Duration::from_secs(1);

/// Lists the server's tools, page by page, in at most `timeout` for the
/// whole listing, with how long the server says the listing is fresh
/// (`ttlMs`: the least of its pages'), if it says. A cursor the server gave before, one longer than
/// [`MAX_CURSOR`], more than [`MAX_PAGES`] pages, [`MAX_TOOLS`] tools or
/// [`MAX_BYTES`] of them end it with the tools gathered: a tool not listed
/// is one the client knows nothing of, so a call of it is treated as
/// unsafe to repeat, and none of its arguments is shown.
///
/// # Errors
///
/// The envelope of a listing that does not finish in time (`transient`,
/// `TIMEOUT`) or that the server refuses.
pub(crate) async fn list(
    peer: &Peer<RoleClient>,
    timeout: Duration,
) -> Result<(Catalog, Option<Duration>), ErrorEnvelope> {
    tokio::time::timeout(timeout, pages(peer))
        .await
        .map_err(|_| {
            ErrorEnvelope::transient(format!(
                "the MCP server did not list its tools within {} ms",
                timeout.as_millis()
            ))
            .with_reason(reasons::TIMEOUT)
        })?
}

async fn pages(peer: &Peer<RoleClient>) -> Result<(Catalog, Option<Duration>), ErrorEnvelope> {
    let mut tools = Catalog::new();
    let mut fresh: Option<Duration> = None;
    let mut bytes = 0;
    // The cursors given so far, by keyed hash: a server's cursors are not kept.
    let keys = RandomState::new();
    let mut cursors: HashSet<u64> = HashSet::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|error| failure::classify_error(&error, true))?;
        if let Some(ttl) = page.ttl_ms.map(Duration::from_millis) {
            fresh = Some(fresh.map_or(ttl, |fresh| fresh.min(ttl)));
        }
        for tool in &page.tools {
            if tools.len() == MAX_TOOLS {
                cut(format!("it lists more than {MAX_TOOLS} tools"));
                return Ok((tools, fresh));
            }
            let tool = RemoteTool::from_rmcp(tool);
            bytes += tool.size();
            if bytes > MAX_BYTES {
                cut(format!("its tools take more than {MAX_BYTES} bytes"));
                return Ok((tools, fresh));
            }
            tools.insert(tool.name.clone(), Arc::new(tool));
        }
        match page.next_cursor {
            None => return Ok((tools, fresh)),
            Some(next) if next.len() > MAX_CURSOR => {
                cut(format!("it gave a cursor longer than {MAX_CURSOR} bytes"));
                return Ok((tools, fresh));
            }
            Some(next) if !cursors.insert(keys.hash_one(&next)) => {
                cut("it gave a cursor it had given before".to_owned());
                return Ok((tools, fresh));
            }
            Some(next) => cursor = Some(next),
        }
    }
    cut(format!("it pages past {MAX_PAGES} pages"));
    Ok((tools, fresh))
}

/// Reports a listing the client ended before the server did.
fn cut(why: String) {
    tracing::warn!(
        why = why.as_str(),
        "stopped listing the MCP server's tools; the tools not listed are treated as unsafe to repeat"
    );
}
