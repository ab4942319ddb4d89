-- Change notices: every instance LISTENs on vwf_changes and wakes whoever waits on what changed
-- (a page following a run, the daemon's timers). The payload is small ("run:<id>",
-- "design:<name>", "job:<design>"), and PostgreSQL sends it when the writing transaction commits.

CREATE FUNCTION vwf_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    key text;
BEGIN
    IF TG_TABLE_NAME = 'vwf_runs' THEN
        IF TG_OP = 'DELETE' OR NEW.doc IS NULL THEN
            RETURN NULL;
        END IF;
        key := 'run:' || NEW.id;
    ELSIF TG_TABLE_NAME = 'vwf_designs' THEN
        key := 'design:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.name ELSE NEW.name END;
    ELSE
        key := 'job:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.design ELSE NEW.design END;
    END IF;
    PERFORM pg_notify('vwf_changes', key);
    RETURN NULL;
END
$$;

CREATE TRIGGER vwf_runs_changed AFTER INSERT OR UPDATE ON vwf_runs
    FOR EACH ROW EXECUTE FUNCTION vwf_notify_change();
CREATE TRIGGER vwf_designs_changed AFTER INSERT OR UPDATE OR DELETE ON vwf_designs
    FOR EACH ROW EXECUTE FUNCTION vwf_notify_change();
CREATE TRIGGER vwf_jobs_changed AFTER INSERT OR UPDATE OR DELETE ON vwf_jobs
    FOR EACH ROW EXECUTE FUNCTION vwf_notify_change();
