//! The public surface, as a user meets it: the types that cross tasks are
//! `Send + Sync + 'static`, and the public types are `Debug` (the runtime
//! denies `missing_debug_implementations`; these are the ones users hold).

use tool_envelope::coordinator::{Completed, Coordinator, Gap, Report};
use tool_envelope::guard::{Blocked, Guards};
use tool_envelope::mcp::{ProtocolError, ToolDefinition, ToolReply, ToolSet};
use tool_envelope::retry::{Backoff, Outcome, RetryBudget, RetryPolicy, RetryStats};
use tool_envelope::{EnvelopeLimits, ErrorEnvelope, Escalation, Found, Partial, Secret, Violation};

fn crosses_tasks<T: Send + Sync + 'static>() {}

fn debug<T: std::fmt::Debug>() {}

#[test]
fn what_crosses_tasks_is_send_sync_and_static() {
    crosses_tasks::<ErrorEnvelope>();
    crosses_tasks::<Escalation>();
    crosses_tasks::<Report<String>>();
    crosses_tasks::<Gap>();
    crosses_tasks::<Completed<String>>();
    crosses_tasks::<Outcome<String>>();
    crosses_tasks::<RetryPolicy>();
    crosses_tasks::<RetryBudget>();
    crosses_tasks::<RetryStats>();
    crosses_tasks::<Guards>();
    crosses_tasks::<Blocked>();
    crosses_tasks::<ToolSet>();
    crosses_tasks::<ToolReply>();
    crosses_tasks::<ToolDefinition>();
    crosses_tasks::<ProtocolError>();
    crosses_tasks::<Partial<String>>();
    crosses_tasks::<Found<String>>();
    crosses_tasks::<Secret<String>>();
    crosses_tasks::<EnvelopeLimits>();
}

#[test]
fn every_public_type_is_debug() {
    debug::<ErrorEnvelope>();
    debug::<Escalation>();
    debug::<Report<u8>>();
    debug::<Coordinator<'static, u8>>();
    debug::<RetryPolicy>();
    debug::<Backoff>();
    debug::<RetryBudget>();
    debug::<Guards>();
    debug::<ToolSet>();
    debug::<Partial<u8>>();
    debug::<Secret<u8>>();
    debug::<Violation>();
    debug::<EnvelopeLimits>();
}
