//! The approving states a tool set has already opened: a person's yes
//! opens one call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::store::Store;

/// The states of approving rounds already opened: each opens once, so that
/// one person's yes runs one call. A state is remembered for as long as it
/// could be opened (its time to live; in a store, for as long as any
/// replica could open it: [`remembered_for`]); past [`MAX_REDEMPTIONS`] remembered
/// at once, or [`MAX_REDEMPTIONS_PER_CALLER`] of one caller's, another
/// approving round is refused rather than forgotten — so one caller who
/// spends states as fast as it can refuses only its own.
///
/// Without a store ([`ToolSet::store`](crate::mcp::ToolSet::store)) this
/// is the ledger of one tool set in one process: replicas that share a key
/// share states, not this ledger. With one, the store keeps it, and every
/// replica that shares the store shares it (SECURITY.md).
pub(super) struct Redemptions {
    used: Mutex<Used>,
    /// The same for rounds that bring no yes (a tool's own answers, spent
    /// for a tool not safe to repeat), apart: however many of those a
    /// caller spends, no approving round is refused for it.
    plain: Mutex<Used>,
    shared: Option<Arc<dyn Store>>,
    /// This ledger's own name, random: without a store, a state that may
    /// bring a yes is sealed with it, and spent only by this ledger — not
    /// by a process restarted with the same key, nor by a tool set built
    /// apart, whose ledgers never saw it spent.
    id: String,
    /// Whether it was said that a round went unrecorded, the record full:
    /// said once, not on every round of a busy server.
    said_full: std::sync::atomic::AtomicBool,
}

impl Default for Redemptions {
    fn default() -> Self {
        Redemptions {
            used: Mutex::default(),
            plain: Mutex::default(),
            shared: None,
            id: nonce(),
            said_full: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// The states remembered, each until when and whose, and how many each
/// caller has.
#[derive(Default)]
struct Used {
    until: HashMap<String, (Kept, Option<Arc<str>>)>,
    counts: HashMap<Option<Arc<str>>, usize>,
}

/// Until when a used state is remembered: its time to live on this
/// process's clock, and the wall-clock time it was sealed to open until,
/// which is what opening it checks (0 when it does not say) — a wall clock
/// stepped back would otherwise open it again once the first ran out.
#[derive(Clone, Copy)]
struct Kept {
    until: Instant,
    expires_ms: i64,
}

impl Kept {
    fn holds(self, now: Instant, now_ms: i64) -> bool {
        // A second more: the sealer stamps its expiry on its own read of
        // the clock, a moment after the one this was given.
        self.until > now || self.expires_ms.saturating_add(1_000) >= now_ms
    }
}

impl Used {
    /// Forgets the states whose time is up.
    fn forget_spent(&mut self, now: Instant) {
        let counts = &mut self.counts;
        let now_ms = crate::store::now_ms();
        self.until.retain(|_, (kept, caller)| {
            let keep = kept.holds(now, now_ms);
            if !keep && let Some(count) = counts.get_mut(&*caller) {
                *count = count.saturating_sub(1);
            }
            keep
        });
        counts.retain(|_, count| *count > 0);
    }

    fn count(&self, caller: &Option<Arc<str>>) -> usize {
        self.counts.get(caller).copied().unwrap_or(0)
    }

    /// Whether `caller` holds as many states as it may.
    fn at_share(&self, caller: &Option<Arc<str>>) -> bool {
        let share = match caller {
            Some(_) => MAX_REDEMPTIONS_PER_CALLER,
            None => MAX_REDEMPTIONS_WITHOUT_TOKEN,
        };
        self.count(caller) >= share
    }
}

/// How much longer than it could open a used state is remembered: for the
/// clocks of the replicas that share a store, which may disagree.
const CLOCKS_MARGIN: Duration = Duration::from_secs(10 * 60);

/// A fresh nonce for a state.
pub(super) fn nonce() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system gives random bytes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// How long a used state, sealed to open until `expires_ms` (0 when it
/// does not say), is remembered by a replica whose own states live `ttl`:
/// until the later of the two, and [`CLOCKS_MARGIN`] more. A replica with
/// a shorter time to live, or a clock ahead of the sealer's, would
/// otherwise forget a state another replica still opens.
fn remembered_for(ttl: Duration, expires_ms: i64) -> Duration {
    let left = expires_ms.saturating_sub(crate::store::now_ms());
    let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
    ttl.max(left).saturating_add(CLOCKS_MARGIN)
}

/// The most approving states one tool set remembers at once.
const MAX_REDEMPTIONS: usize = 100_000;

/// The most of one caller's approving states one tool set remembers at once:
/// a hundredth of the whole, so that refusing everyone's approving rounds
/// takes a hundred callers, each with a token of its own, spending a
/// thousand states each (a person's yes to each) within a state's time to
/// live. A person approves far fewer; a store has no such bound.
const MAX_REDEMPTIONS_PER_CALLER: usize = MAX_REDEMPTIONS / 100;

/// The most states of callers without a token remembered at once: they
/// count as one, and on a server that checks no token they are every
/// caller — any one of whom can refuse the others' approving rounds by
/// spending this many.
const MAX_REDEMPTIONS_WITHOUT_TOKEN: usize = MAX_REDEMPTIONS / 10;

/// Longer than any process runs: a hundred years.
const FOR_GOOD: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

impl Redemptions {
    /// A ledger kept in `store`.
    pub(super) fn shared(store: Arc<dyn Store>) -> Self {
        Redemptions {
            shared: Some(store),
            ..Redemptions::default()
        }
    }

    /// Says, once, that a round's state opened without its use recorded.
    pub(super) fn say_full(&self) {
        if !self
            .said_full
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                "a round's state was opened without its use recorded: the record of used states is full (said once; a store, `ToolSet::store`, has no such bound)"
            );
        }
    }

    /// The name states are sealed with for this ledger to spend them:
    /// its own, random, or its store's ([`Store::ledger`]), which every
    /// replica sharing the store shares — and no other store has.
    pub(super) fn ledger(&self) -> &str {
        match &self.shared {
            Some(store) => store.ledger(),
            None => &self.id,
        }
    }

    /// Records the state `nonce`, `caller`'s, sealed to open until
    /// `expires_ms` (0 when it does not say), as used: for `ttl` in this
    /// process (whose one clock sealed it), in a store for as long as any
    /// replica could open it ([`remembered_for`]). Whether it was the first
    /// use, used already, or could not be recorded: no more can be
    /// remembered (`Full`), or the store cannot say (`Unknown`).
    /// `approving`: the state carries or brings a yes (remembered apart
    /// from the others, in this process).
    pub(super) async fn redeem(
        &self,
        nonce: &str,
        ttl: Duration,
        expires_ms: i64,
        caller: Option<&str>,
        approving: bool,
    ) -> Redeemed {
        if let Some(store) = &self.shared {
            let held = remembered_for(ttl, expires_ms);
            let until = crate::store::now_ms()
                .saturating_add(i64::try_from(held.as_millis()).unwrap_or(i64::MAX));
            return match store.redeem(nonce, until).await {
                Ok(true) => Redeemed::First,
                Ok(false) => Redeemed::Used,
                Err(error) => {
                    tracing::warn!(%error, "a state's use could not be recorded: the store failed");
                    Redeemed::Unknown
                }
            };
        }
        // A time to live past what the clock can count (`Duration::MAX`)
        // holds as long as the process does.
        let far = Instant::now() + FOR_GOOD;
        let kept = Kept {
            until: Instant::now().checked_add(ttl).unwrap_or(far),
            expires_ms,
        };
        let caller: Option<Arc<str>> = caller.map(Arc::from);
        let now = Instant::now();
        // A state is used once, whichever record remembers it: one spent
        // with a yes is not opened again without one.
        let (record, other) = match approving {
            true => (&self.used, &self.plain),
            false => (&self.plain, &self.used),
        };
        let spent = |other: &Used| {
            (other.until.get(nonce))
                .is_some_and(|(kept, _)| kept.holds(now, crate::store::now_ms()))
        };
        if spent(&other.lock().unwrap_or_else(PoisonError::into_inner)) {
            return Redeemed::Used;
        }
        let mut used = record.lock().unwrap_or_else(PoisonError::into_inner);
        if used.until.len() >= MAX_REDEMPTIONS || used.at_share(&caller) {
            used.forget_spent(now);
        }
        match () {
            _ if spent(&used) => Redeemed::Used,
            _ if used.until.len() >= MAX_REDEMPTIONS => Redeemed::Full,
            _ if used.at_share(&caller) => Redeemed::Full,
            _ => {
                if let Some((_, before)) =
                    used.until.insert(nonce.to_owned(), (kept, caller.clone()))
                    && let Some(count) = used.counts.get_mut(&before)
                {
                    *count = count.saturating_sub(1);
                }
                *used.counts.entry(caller).or_insert(0) += 1;
                Redeemed::First
            }
        }
    }
}

/// What recording a state's use found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Redeemed {
    /// Its first use: recorded.
    First,
    /// Used already.
    Used,
    /// Not recorded: no more can be remembered (of the caller's, or at all).
    Full,
    /// Not recorded: the store cannot say.
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Redemptions {
        /// Whether recording `nonce` was its first use.
        async fn first(
            &self,
            nonce: &str,
            ttl: Duration,
            expires_ms: i64,
            caller: Option<&str>,
        ) -> bool {
            self.redeem(nonce, ttl, expires_ms, caller, true).await == Redeemed::First
        }
    }

    #[tokio::test]
    async fn a_time_to_live_past_the_clocks_reach_holds_for_good() {
        let ledger = Redemptions::default();
        assert!(ledger.first("forever", Duration::MAX, 0, None).await);
        assert!(!ledger.first("forever", Duration::MAX, 0, None).await);
    }

    #[tokio::test]
    async fn one_caller_spending_states_refuses_only_its_own() {
        let ledger = Redemptions::default();
        let ttl = Duration::from_secs(900);
        for n in 0..MAX_REDEMPTIONS_PER_CALLER {
            assert!(
                ledger
                    .first(&format!("m-{n}"), ttl, 0, Some("mallory"))
                    .await
            );
        }
        assert!(
            !ledger.first("m-one-more", ttl, 0, Some("mallory")).await,
            "mallory's share is spent"
        );
        assert!(
            ledger.first("alice-1", ttl, 0, Some("alice")).await,
            "alice's approval still opens"
        );
        assert!(
            !ledger.first("alice-1", ttl, 0, Some("alice")).await,
            "once"
        );
        assert!(
            !ledger.first("m-7", ttl, 0, Some("alice")).await,
            "a used state stays used, whoever sends it"
        );
    }

    #[tokio::test]
    async fn every_caller_but_one_at_its_share_leaves_room_for_the_last() {
        let ledger = Redemptions::default();
        let ttl = Duration::from_secs(900);
        let callers = MAX_REDEMPTIONS / MAX_REDEMPTIONS_PER_CALLER;
        assert!(callers >= 100, "a few callers cannot fill the ledger");
        for caller in 1..callers {
            let name = format!("caller-{caller}");
            for n in 0..MAX_REDEMPTIONS_PER_CALLER {
                assert!(
                    ledger
                        .first(&format!("{name}/{n}"), ttl, 0, Some(&name))
                        .await
                );
            }
            assert!(
                !ledger
                    .first(&format!("{name}/more"), ttl, 0, Some(&name))
                    .await
            );
        }
        assert!(
            ledger.first("alice-1", ttl, 0, Some("alice")).await,
            "the last caller's approval still opens"
        );
    }

    /// Callers without a token count as one, with a share of their own:
    /// on a server that checks no token they are everyone.
    #[tokio::test]
    async fn callers_without_a_token_share_a_tenth() {
        let ledger = Redemptions::default();
        let ttl = Duration::from_secs(900);
        for n in 0..MAX_REDEMPTIONS_WITHOUT_TOKEN {
            assert!(
                ledger.first(&format!("anon-{n}"), ttl, 0, None).await,
                "{n}"
            );
        }
        assert!(!ledger.first("anon-more", ttl, 0, None).await);
        assert!(ledger.first("alice-1", ttl, 0, Some("alice")).await);
    }

    /// Its time to live run out on this process's clock, a state that
    /// still opens by the wall clock (stepped back since) stays used.
    #[tokio::test]
    async fn a_state_stays_used_while_the_wall_clock_still_opens_it() {
        let ledger = Redemptions::default();
        let opens_until = crate::store::now_ms() + 60_000;
        assert!(ledger.first("s", Duration::ZERO, opens_until, None).await);
        assert!(!ledger.first("s", Duration::ZERO, opens_until, None).await);
        let spent = crate::store::now_ms() - 1_001;
        assert!(ledger.first("t", Duration::ZERO, spent, None).await);
        assert!(
            ledger.first("t", Duration::ZERO, spent, None).await,
            "forgotten"
        );
    }

    #[tokio::test]
    async fn a_callers_spent_states_are_forgotten_when_their_time_is_up() {
        let ledger = Redemptions::default();
        for n in 0..MAX_REDEMPTIONS_PER_CALLER {
            assert!(
                ledger
                    .first(&format!("m-{n}"), Duration::ZERO, 0, Some("mallory"))
                    .await
            );
        }
        assert!(
            ledger
                .first("m-next", Duration::from_secs(900), 0, Some("mallory"))
                .await
        );
    }
}
