//! What a process makes once and keeps: the forms its questions ask, and
//! their validators (`ask`).

/// What a process makes once and keeps for its questions, up to
/// [`Kept::MOST`] entries; past it, it starts over.
pub(crate) struct Kept<K, V>(
    std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<K, V>>>,
);

impl<K: Eq + std::hash::Hash, V: Clone> Kept<K, V> {
    const MOST: usize = 256;

    pub(crate) const fn new() -> Self {
        Kept(std::sync::OnceLock::new())
    }

    /// The value kept for `key`, or the one `make` makes, then kept.
    pub(crate) fn get_or_make<E>(
        &self,
        key: K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        use std::sync::PoisonError;
        let kept = self.0.get_or_init(Default::default);
        let found = kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some(value) = found {
            return Ok(value);
        }
        let value = make()?;
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= Self::MOST {
            kept.clear();
        }
        kept.insert(key, value.clone());
        Ok(value)
    }
}
