//! What changed in a run since it was last saved, as parts a store can write one by one, so
//! recording a step costs the size of that step and not the size of the run.
//!
//! A run document splits into parts: a small head (status, error, pending, parked, skipped,
//! `updated_at`…), one part per step record, per top-level output, per history event, per
//! delivery, per loop (its items) and per pass of a loop. The plan, the trigger, the id and the
//! creation time never change after the run starts, so they live only in the whole document.
//!
//! The engine marks a part whenever it changes it ([`Run::take_changes`] hands them over). A
//! store keeps a whole document as a checkpoint and the parts written since as upserts keyed by
//! [`Part`]; a reader applies them to the checkpoint ([`Run::apply`]) in [`Part`] order. Applying
//! the parts of every write since a checkpoint gives exactly the document a writer that saved the
//! whole run each time would have left (the tests hold every engine path to that).
//!
//! Invariants:
//! - A part's value depends only on the run's state, so writing a part twice is harmless and
//!   the last write wins.
//! - Indexed parts (history, deliveries, passes) only grow: a reader meeting a gap refuses the
//!   journal instead of guessing.
//! - When a change cannot be said as parts, the engine asks for a whole write (`whole`); a run
//!   that was just started or read back asks for one too, so a store always has a checkpoint.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Handled, LoopState, PassState, Pending, Run, RunFailure, Status, StepRecord};
use crate::names::{NodeId, PassId, RunId};
use crate::time::{self, Ts};

/// One part of a run document. The declaration order is the order a reader applies them in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    Head,
    /// A loop's items and concurrency (its passes are parts of their own).
    Loop(NodeId),
    /// A step record, by its step instance (`node` or `node#pass`).
    Step(PassId),
    /// A top-level output view, by node id.
    Output(String),
    History(usize),
    Delivery(usize),
    /// One pass of a loop (keyed `loop#index`).
    Pass(NodeId, usize),
}

impl Part {
    /// A short stable name of the kind, for a store's column.
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Head => "head",
            Part::Loop(_) => "loop",
            Part::Step(_) => "step",
            Part::Output(_) => "output",
            Part::History(_) => "history",
            Part::Delivery(_) => "delivery",
            Part::Pass(..) => "pass",
        }
    }

    /// The part's key within its kind (empty for the head; `loop#index` for a pass).
    pub fn key(&self) -> String {
        match self {
            Part::Head => String::new(),
            Part::Loop(k) => k.to_string(),
            Part::Output(k) => k.clone(),
            Part::Step(k) => k.to_string(),
            Part::History(i) | Part::Delivery(i) => i.to_string(),
            Part::Pass(lp, i) => PassId::in_pass(lp.clone(), *i).to_string(),
        }
    }

    /// The part a store's `kind` and `key` name, if any.
    pub fn parse(kind: &str, key: &str) -> Option<Part> {
        let index = || key.parse::<usize>().ok();
        Some(match kind {
            "head" if key.is_empty() => Part::Head,
            "loop" => Part::Loop(NodeId::parse(key).ok()?),
            "step" => Part::Step(PassId::parse(key).ok()?),
            "output" => Part::Output(key.to_string()),
            "history" => Part::History(index()?),
            "delivery" => Part::Delivery(index()?),
            "pass" => {
                let pass = PassId::parse(key).ok()?;
                Part::Pass(pass.node_id(), pass.pass()?)
            }
            _ => return None,
        })
    }
}

/// What changed since the last [`Run::take_changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Save the whole document: the store has no checkpoint of this state to build on.
    pub whole: bool,
    /// The parts that changed (the head always), in apply order.
    pub parts: Vec<Part>,
    /// The run ended since its last save (or its load): this save records its end.
    pub ended: bool,
}

/// The engine's note of changed parts. Not part of the document: two runs with the same state
/// are equal whatever they have saved.
#[derive(Debug, Clone)]
pub(crate) struct Dirty {
    whole: bool,
    parts: BTreeSet<Part>,
    /// What the saves since the last whole one measured (see [`Run::record_size`]).
    bytes: Saved,
    /// The status the store holds (as last saved or read back); `None` when unknown.
    stored: Option<Status>,
}

/// The sizes the saves of a run measured: the last whole document, and each part saved since at
/// its newest size.
#[derive(Debug, Clone, Default)]
struct Saved {
    whole: u64,
    parts: BTreeMap<Part, u64>,
}

/// How many bytes a run's stored record holds once a save is made (see [`Run::record_size`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSize {
    pub bytes: u64,
    /// The whole document's size, for a whole save.
    whole: Option<u64>,
    /// The size of each part saved, for a save of parts.
    parts: Vec<(Part, u64)>,
}

impl Default for Dirty {
    /// A run just started or just read back: its first save is a whole one.
    fn default() -> Self {
        Dirty { whole: true, parts: BTreeSet::new(), bytes: Saved::default(), stored: None }
    }
}

impl PartialEq for Dirty {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Dirty {
    pub(crate) fn mark(&mut self, part: Part) {
        if !self.whole {
            self.parts.insert(part);
        }
    }
}

/// The fields of the head part. Every field of the document that can change and is not a part
/// of its own is here; the tests fail when one is missing.
#[derive(Serialize, Deserialize)]
struct Head {
    ok: bool,
    status: Status,
    pending: Option<Pending>,
    skipped: Vec<String>,
    error: Option<RunFailure>,
    failed_node: Option<PassId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    handled: Vec<Handled>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure_run: Option<RunId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    child_runs: Vec<RunId>,
    #[serde(with = "time")]
    updated_at: Ts,
    tokens_used: u64,
    parked: Vec<Pending>,
}

/// A loop part: the loop without its passes.
#[derive(Serialize, Deserialize)]
struct LoopHead {
    items: Vec<Value>,
    concurrency: u64,
}

impl Run {
    /// Hands over what changed since the last call: the head and the changed parts, or `whole`.
    /// A run at rest (parked or finished) is always saved whole, so a store keeps parts only
    /// for runs in flight.
    pub fn take_changes(&mut self) -> Changes {
        let bytes = std::mem::take(&mut self.dirty.bytes);
        let fresh = Dirty { whole: false, parts: BTreeSet::new(), bytes, stored: Some(self.status) };
        let dirty = std::mem::replace(&mut self.dirty, fresh);
        let ended = self.status.is_finished() && !dirty.stored.is_some_and(|s| s.is_finished());
        if dirty.whole || self.status != Status::Running {
            return Changes { whole: true, parts: Vec::new(), ended };
        }
        let mut parts: Vec<Part> = dirty.parts.into_iter().collect();
        if parts.first() != Some(&Part::Head) {
            parts.insert(0, Part::Head);
        }
        Changes { whole: false, parts, ended }
    }

    /// This run was just read back from the store: it holds the run as it is now (so a save of a
    /// run that had already ended does not record its end again).
    pub fn read_back(&mut self) {
        self.dirty.stored = Some(self.status);
    }

    /// Whether anything changed since the changes were last taken (a save is due).
    pub fn has_changes(&self) -> bool {
        self.dirty.whole || !self.dirty.parts.is_empty()
    }

    /// The changes last taken were not saved: the next save is a whole one.
    pub fn unsaved(&mut self) {
        self.mark_whole();
        self.dirty.stored = None;
    }

    /// A part's current value, or `None` when the run has no such part.
    pub fn part(&self, part: &Part) -> Option<Value> {
        let value = match part {
            Part::Head => serde_json::to_value(Head {
                ok: self.ok,
                status: self.status,
                pending: self.pending.clone(),
                skipped: self.skipped.clone(),
                error: self.error.clone(),
                failed_node: self.failed_node.clone(),
                handled: self.handled.clone(),
                failure_run: self.failure_run.clone(),
                child_runs: self.child_runs.clone(),
                updated_at: self.updated_at,
                tokens_used: self.tokens_used,
                parked: self.parked.clone(),
            }),
            Part::Loop(lp) => {
                let state = self.loops.get(lp)?;
                serde_json::to_value(LoopHead { items: state.items.clone(), concurrency: state.concurrency })
            }
            Part::Step(node) => serde_json::to_value(self.record(node)?),
            Part::Output(id) => Ok(self.outputs.get(id)?.clone()),
            Part::History(i) => serde_json::to_value(self.history.get(*i)?),
            Part::Delivery(i) => serde_json::to_value(self.deliveries.get(*i)?),
            Part::Pass(lp, i) => serde_json::to_value(self.loops.get(lp)?.passes.get(*i)?),
        };
        value.ok()
    }

    /// Applies a part written after the document this run was read from. Parts are applied in
    /// [`Part`] order; an indexed part past the end of its list is a gap and refused.
    pub fn apply(&mut self, part: &Part, value: Value) -> Result<(), String> {
        fn read<T: serde::de::DeserializeOwned>(part: &Part, value: Value) -> Result<T, String> {
            serde_json::from_value(value).map_err(|e| format!("the {} part {:?} cannot be read: {e}", part.kind(), part.key()))
        }
        fn put<T>(list: &mut Vec<T>, i: usize, item: T, part: &Part) -> Result<(), String> {
            match i.cmp(&list.len()) {
                std::cmp::Ordering::Less => list[i] = item,
                std::cmp::Ordering::Equal => list.push(item),
                std::cmp::Ordering::Greater => {
                    return Err(format!("the {} part {i} comes after a missing one ({} kept)", part.kind(), list.len()));
                }
            }
            Ok(())
        }
        match part {
            Part::Head => {
                let h: Head = read(part, value)?;
                self.ok = h.ok;
                self.status = h.status;
                self.pending = h.pending;
                self.skipped = h.skipped;
                self.error = h.error;
                self.failed_node = h.failed_node;
                self.handled = h.handled;
                self.failure_run = h.failure_run;
                self.child_runs = h.child_runs;
                self.updated_at = h.updated_at;
                self.tokens_used = h.tokens_used;
                self.parked = h.parked;
            }
            Part::Loop(lp) => {
                let l: LoopHead = read(part, value)?;
                let state =
                    self.loops.entry(lp.clone()).or_insert_with(|| LoopState { items: Vec::new(), concurrency: 0, passes: Vec::new() });
                state.items = l.items;
                state.concurrency = l.concurrency;
            }
            Part::Step(node) => {
                let record: StepRecord = read(part, value)?;
                if record.node != *node {
                    return Err(format!("the step part {node:?} holds the record of {:?}", record.node));
                }
                match self.record_index(node) {
                    Some(i) => self.steps[i] = record,
                    None => {
                        let at = self.record_position(node);
                        self.steps.insert(at, record);
                    }
                }
            }
            Part::Output(id) => {
                self.outputs.insert(id.clone(), value);
            }
            Part::History(i) => put(&mut self.history, *i, read(part, value)?, part)?,
            Part::Delivery(i) => put(&mut self.deliveries, *i, read(part, value)?, part)?,
            Part::Pass(lp, i) => {
                let pass: PassState = read(part, value)?;
                let Some(state) = self.loops.get_mut(lp) else {
                    return Err(format!("the pass part {lp}#{i} belongs to no loop"));
                };
                put(&mut state.passes, *i, pass, part)?;
            }
        }
        Ok(())
    }

    /// Marks a part changed.
    pub(super) fn mark(&mut self, part: Part) {
        self.dirty.mark(part);
    }

    /// Asks for the next save to be a whole one.
    pub(super) fn mark_whole(&mut self) {
        self.dirty = Dirty { stored: self.dirty.stored, ..Dirty::default() };
    }

    /// The bytes the stored record holds once `changes` (from [`Run::take_changes`]) are saved.
    /// A whole save counts the document (serialized into a counter, nothing kept); a save of
    /// parts counts only those parts: the last whole document plus every part saved since at
    /// its newest size. That errs high by the size the whole document already gave the parts
    /// saved since (the head, a step record written at its start and its end), never low, and
    /// each whole save (a run parking or ending) measures afresh. A caller that saves the
    /// changes hands the answer back to [`Run::record_saved`].
    pub fn record_size(&self, changes: &Changes) -> RecordSize {
        if changes.whole {
            let bytes = counted(self);
            return RecordSize { bytes, whole: Some(bytes), parts: Vec::new() };
        }
        // A part inside the document also costs its key and punctuation (`"key":`, a comma, a
        // loop's `"passes":[]`): counted generously, so the sum errs high.
        let framing = |p: &Part| p.key().len() as u64 + PART_FRAMING;
        let parts: Vec<(Part, u64)> =
            changes.parts.iter().map(|p| (p.clone(), self.part(p).map_or(0, |v| counted(&v) + framing(p)))).collect();
        let saved = &self.dirty.bytes;
        let earlier: u64 = saved.parts.iter().filter(|(p, _)| !changes.parts.contains(p)).map(|(_, n)| n).sum();
        let bytes = saved.whole + earlier + parts.iter().map(|(_, n)| n).sum::<u64>();
        RecordSize { bytes, whole: None, parts }
    }

    /// The save `size` measured was made: later measures build on it.
    pub fn record_saved(&mut self, size: RecordSize) {
        let saved = &mut self.dirty.bytes;
        if let Some(whole) = size.whole {
            *saved = Saved { whole, parts: BTreeMap::new() };
        }
        saved.parts.extend(size.parts);
    }
}

/// Bytes a part costs in the document beyond its value and key (see [`Run::record_size`]).
const PART_FRAMING: u64 = 16;

/// The length of `value`'s JSON, serialized into a counter.
fn counted(value: &impl Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing a run or a part into memory cannot fail (string keys only).
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
