//! Typed flow-control documents over the store's JSON ones ([`Store::edit_doc`]): a design's
//! concurrency slots, a trigger's debounce burst or throttle window, a rate limit's bucket. Each
//! kind names its scopes with its own prefix (`slots␁…`), reads a document it cannot parse as an
//! empty one (replaced by the next edit), is deleted when empty, and marks itself `waiting` when
//! the daemon has something to do about it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vwf_store::Wait;

use vwf_store::{Store, StoreError};

/// A kind of flow-control document.
pub trait FlowDoc: Serialize + DeserializeOwned + Default + Send {
    /// The prefix of its scopes.
    const KIND: &'static str;
    /// Nothing to keep: the document is deleted.
    fn is_empty(&self) -> bool;
    /// The daemon has something to do about it (see [`waiting`]).
    fn is_waiting(&self) -> bool;
}

fn scope_of<T: FlowDoc>(scope: &str) -> String {
    format!("{}\u{1}{scope}", T::KIND)
}

fn typed<T: FlowDoc>(doc: &Value) -> T {
    serde_json::from_value(doc.clone()).unwrap_or_default()
}

/// The document of `scope` as stored (empty when there is none).
pub fn read<T: FlowDoc>(store: &dyn Store, scope: &str) -> Result<T, StoreError> {
    Ok(typed(&store.read_doc(&scope_of::<T>(scope)).wait()?))
}

/// Edits the document of `scope` atomically (see [`Store::edit_doc`]; `edit` may be called more
/// than once); answers it as kept.
pub fn edit<T: FlowDoc>(store: &dyn Store, scope: &str, mut edit: impl FnMut(&mut T) + Send) -> Result<T, StoreError> {
    let mut kept = T::default();
    store
        .edit_doc(&scope_of::<T>(scope), &mut |doc| {
            let mut now: T = typed(doc);
            edit(&mut now);
            *doc = match serde_json::to_value(&now) {
                Ok(Value::Object(mut map)) if !now.is_empty() => {
                    map.insert("waiting".into(), Value::Bool(now.is_waiting()));
                    Value::Object(map)
                }
                _ => Value::Null,
            };
            kept = now;
        })
        .wait()?;
    Ok(kept)
}

/// The scopes of kind `T` whose document waits for something, among `waiting` (what
/// [`Store::waiting_docs`] listed): one listing serves every kind.
pub fn of_kind<T: FlowDoc>(waiting: &[String]) -> Vec<String> {
    let prefix = scope_of::<T>("");
    waiting.iter().filter_map(|s| s.strip_prefix(&prefix).map(String::from)).collect()
}
