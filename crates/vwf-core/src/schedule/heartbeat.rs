//! Heartbeat triggers: real-time intervals inside a window of allowed days, in a time zone.

use super::*;

/// A heartbeat trigger read from its node (SPEC §10): fire every `every_seconds` of real time,
/// only while the local wall clock of `tz` is inside `window` (minutes since midnight, end
/// exclusive, may wrap midnight) on one of `days` (index 0 = Sunday).
///
/// A window that wraps midnight belongs to the day it starts on: `22:00-06:00` with `mon-fri`
/// covers Friday 23:00 and Saturday 05:00, but not Monday 03:00 (that part opened on Sunday).
/// Without a window the whole of every allowed day is inside.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub every_seconds: u64,
    pub window: Option<(u32, u32)>,
    pub days: [bool; 7],
    pub tz: Tz,
}

impl Heartbeat {
    /// When the heartbeat fires next, given the current instant `after` and its `last` fire.
    ///
    /// The next tick is `last + every` (real elapsed time, so a daylight-saving change neither
    /// stretches nor shrinks an interval), or `after` itself when there was no fire yet or the
    /// tick is already past (missed ticks are caught up once, not one by one). A tick inside the
    /// window on an allowed day fires as is; otherwise the next fire is the next opening of the
    /// window on an allowed day (an opening inside a spring-forward gap happens when the gap ends,
    /// if the window is still open then, else not that day; one inside a fall-back overlap at its
    /// first occurrence, and at its second too when the clock went back out of the window in
    /// between). Every fire lies inside the window. `None` when nothing opens within about a week
    /// (no allowed day, which validation rules out) or at the edge of time.
    pub fn next_heartbeat(&self, after: DateTime<Utc>, last: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
        let tick = match last {
            Some(last) => {
                let every = TimeDelta::try_seconds(i64::try_from(self.every_seconds).ok()?)?;
                last.checked_add_signed(every)?.max(after)
            }
            None => after,
        };
        if self.allows(tick) {
            return Some(tick);
        }
        self.next_opening(tick)
    }

    /// `true` when instant `t` lies inside the window of an allowed day, in local wall time.
    pub(super) fn allows(&self, t: DateTime<Utc>) -> bool {
        let Some(wall) = local_wall(self.tz, t) else {
            return false;
        };
        let minute = wall.hour() * 60 + wall.minute();
        let today = wall.weekday().num_days_from_sunday() as usize;
        let yesterday = (today + 6) % 7;
        match self.window {
            None => self.days[today],
            Some((start, end)) if start < end => self.days[today] && in_window(self.window, minute),
            Some((start, end)) => (minute >= start && self.days[today]) || (minute < end && self.days[yesterday]),
        }
    }

    /// The first opening of the window (midnight without one) on an allowed day at or after `from`.
    pub(super) fn next_opening(&self, from: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let open = self.window.map_or(0, |(start, _)| start);
        let local = local_wall(self.tz, from)?;
        let mut date = local.date().pred_opt().unwrap_or(local.date());
        for _ in 0..HEARTBEAT_SEARCH_DAYS {
            if self.days[date.weekday().num_days_from_sunday() as usize] {
                let wall = date.and_hms_opt(open / 60, open % 60, 0)?;
                // An opening in a fall-back overlap happens at its first occurrence, and again at
                // its second when the clock went back out of the window in between.
                let openings = match self.tz.from_local_datetime(&wall) {
                    LocalResult::Ambiguous(a, b) => [Some(a.min(b)), Some(a.max(b))].map(|t| t.map(|t| t.with_timezone(&Utc))),
                    _ => [resolve_wall(self.tz, wall), None],
                };
                // An opening pushed out of the window by a clock change (a window inside the
                // spring-forward gap) does not happen that day.
                if let Some(t) = openings.into_iter().flatten().find(|t| *t >= from && self.allows(*t)) {
                    return Some(t);
                }
            }
            date = date.succ_opt()?;
        }
        None
    }
}
