-- Runs waiting for an event (a wait_event step), with what each waits for (`note`, the runner's
-- words): a row is written before the run is saved waiting, and dropped once the run waits for
-- the event no more. A hint: the run's record says whether it still waits, so a row left behind
-- by a crash is dropped by the next event of its name.

CREATE TABLE vwf_event_waiters (
    event text NOT NULL,
    run_id text NOT NULL,
    note text NOT NULL,
    PRIMARY KEY (event, run_id)
);
