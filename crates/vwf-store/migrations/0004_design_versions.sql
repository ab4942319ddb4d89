-- Design versions: every content a design was saved with, numbered per design (see
-- vwf_core::versions). A row is inserted once and never updated; a pruning deletes rows. Rows
-- outlive their design (no foreign key), so runs of a deleted design still show their version.

CREATE TABLE vwf_design_versions (
    name text NOT NULL,
    version bigint NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (name, version)
);
