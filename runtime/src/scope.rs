//! The scope of one call: how its arguments are masked wherever they are
//! shown, who made it, and the blocks a person approved for it — what its
//! guards may read besides the arguments. A call served by a tool set has
//! all three; a `#[tool]` called from Rust, none but its own capture.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::caller::Caller;
use crate::redact::arguments::ArgumentMask;

/// The scope of one call ([`crate::query::Query::Arguments`]).
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// How the call's arguments are masked wherever they are shown.
    pub(crate) mask: ArgumentMask<'a>,
    /// Who made the call, as a token validator said.
    pub(crate) caller: Option<&'a Caller>,
    /// The blocks a person approved for the call.
    pub(crate) approved: Option<&'a Approved>,
}

impl<'a> Scope<'a> {
    /// The scope of a call known only by how its arguments are masked.
    pub(crate) fn masked(mask: ArgumentMask<'a>) -> Self {
        Scope {
            mask,
            caller: None,
            approved: None,
        }
    }
}

/// The blocks a person approved during one call, by the key each block got
/// when the call's guards met it ([`Waivers`](crate::guard::Waivers)): its
/// checkpoint, its place among the approvable blocks met, and a digest of
/// what it says. An approval waives that one block, never another that
/// shares its reason or its message.
///
/// While a tool set looks ahead ([`look_ahead`](Self::look_ahead)) — before
/// a call waits for approvers, to ask its client now for any block the
/// client may approve after theirs — the blocks approvers decide pass as
/// if approved, and the call stops where its body would run: a look ahead
/// never runs a tool. While it looks behind the blocks about to be put to
/// the client's user ([`probe_past`](Self::probe_past)), to read the block
/// for approvers their yes would meet next, those blocks alone pass, and
/// the call stops where its body would run too.
#[derive(Default, Debug)]
pub(crate) struct Approved {
    keys: Mutex<Keys>,
    /// Looking ahead: blocks for approvers pass, bodies do not run.
    looking: AtomicBool,
    /// Looking behind a block about to be put to the client's user: every
    /// other block stands, bodies do not run.
    probing: AtomicBool,
    /// A look ahead, or behind, reached a body: every guard passed.
    reached: AtomicBool,
}

/// The keys approved, and which of them the client's user approved.
#[derive(Default, Debug)]
struct Keys {
    all: Vec<String>,
    by_client: Vec<String>,
}

impl Approved {
    /// Approves the block whose key is `key`; `by_client` when the
    /// client's user did (as opposed to approvers at the server).
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn approve(&self, key: &str, by_client: bool) {
        let mut keys = self.lock();
        keys.all.push(key.to_owned());
        if by_client {
            keys.by_client.push(key.to_owned());
        }
    }

    /// Whether the block whose key is `key` was approved.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.lock().all.iter().any(|approved| approved == key)
    }

    /// The keys of the blocks the client's user approved for the call: an
    /// approval that waits for approvers carries them to the call's run.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn by_client(&self) -> Vec<String> {
        self.lock().by_client.clone()
    }

    /// Starts (`true`) or ends a look ahead; ending it says whether it
    /// reached the tool's body, every guard passed.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn look_ahead(&self, looking: bool) -> bool {
        self.looking.store(looking, Ordering::SeqCst);
        self.reached.swap(false, Ordering::SeqCst)
    }

    /// Starts (`true`) or ends a look behind the blocks whose keys are
    /// `passing`, about to be put to the client's user: those blocks pass
    /// as if they said yes, every other stands as it would, and the call
    /// stops where its body would run — to read which block their yes
    /// would meet next. Ending it takes those passes back, and says whether
    /// it reached the tool's body, every guard passed.
    #[cfg_attr(not(feature = "rmcp"), allow(dead_code))]
    pub(crate) fn probe_past(&self, passing: &[String], probing: bool) -> bool {
        let mut keys = self.lock();
        for key in passing {
            match probing {
                true => keys.all.push(key.clone()),
                false => {
                    if let Some(at) = keys.all.iter().rposition(|approved| approved == key) {
                        keys.all.remove(at);
                    }
                }
            }
        }
        drop(keys);
        self.probing.store(probing, Ordering::SeqCst);
        self.reached.swap(false, Ordering::SeqCst)
    }

    /// Whether the call is looked ahead of: a block for approvers passes.
    pub(crate) fn looking(&self) -> bool {
        self.looking.load(Ordering::SeqCst)
    }

    /// Whether the body of the call about to run must not: the call is
    /// looked ahead of, or behind, and has just passed every guard (noted).
    pub(crate) fn stops_body(&self) -> bool {
        let stops = self.looking() || self.probing.load(Ordering::SeqCst);
        if stops {
            self.reached.store(true, Ordering::SeqCst);
        }
        stops
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
