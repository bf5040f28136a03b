//! The one verdict on a call's guards, on every path: a block is an
//! envelope, a panic blocks the call, and a block a person approved for the
//! call is waived — that block alone ([`Waivers`]).

use std::sync::atomic::{AtomicU32, Ordering};

use sha2::{Digest, Sha256};

use super::{Blocked, Guard, ToolCall};
use crate::reasons;
use crate::scope::Approved;

/// What the guards of one served call may waive: the blocks a person
/// approved, named by the keys [`ToolCall::waive`] gives the approvable
/// blocks it meets — `checkpoint` (which set of guards), then the block's
/// place among the approvable ones met, then a digest of what it says.
#[derive(Debug)]
pub(crate) struct Waivers<'a> {
    checkpoint: char,
    pub(super) approved: &'a Approved,
    met: AtomicU32,
}

impl<'a> Waivers<'a> {
    /// The waivers of one check of the guards at `checkpoint`.
    pub(crate) fn new(checkpoint: char, approved: &'a Approved) -> Self {
        Waivers {
            checkpoint,
            approved,
            met: AtomicU32::new(0),
        }
    }

    /// The key of the next approvable block met, `blocked`.
    pub(super) fn key_of(&self, blocked: &Blocked) -> String {
        let place = self.met.fetch_add(1, Ordering::Relaxed);
        let mut digest = Sha256::new();
        for part in [
            blocked.category.as_str(),
            blocked.reason.as_ref(),
            blocked.message.as_str(),
        ] {
            digest.update(part.as_bytes());
            digest.update([0]);
        }
        // Who may approve it, when not the client's user: a client's yes to
        // a block of the same words never waives one that approvers at the
        // server decide (the guard's answer may change between the two).
        if let Some(scope) = blocked.approver_scope() {
            digest.update([1]);
            digest.update(scope.as_bytes());
            digest.update([0]);
        }
        let digest = digest.finalize();
        let short = hex::encode(&digest[..6]);
        format!("{}{place}-{short}", self.checkpoint)
    }
}

/// The guard's verdict on `call`: a block is the guard's envelope, and a
/// guard that panics blocks the call with an `other` one — the call never
/// runs unchecked. A block a person approved for this call (the call's
/// [`Waivers`]) lets it through; the guards of a chain after it still run.
/// Every path that checks guards asks here: a `#[tool]`'s own guard, a tool
/// set's guards, a client's.
pub(crate) fn verdict(
    call: &ToolCall<'_>,
    guard: &(impl Guard + ?Sized),
) -> Result<(), crate::ErrorEnvelope> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| guard.check(call))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(mut blocked)) => match call.waive(&mut blocked) {
            true => Ok(()),
            false => Err(crate::classify::caught_envelope(blocked)),
        },
        Err(panic) => {
            let envelope = crate::classify::panicked(
                &format!("the guard of tool `{}`", call.tool),
                panic.as_ref(),
            )
            .with_reason(reasons::GUARD_PANIC);
            Err(envelope.remade(|parts| parts.refused = Some(crate::envelope::Refusal::Blocked)))
        }
    }
}
