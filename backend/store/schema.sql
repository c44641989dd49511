-- Presupposition Lab store. One DuckDB file; every table is keyed by upstream ids.
-- Rows that an ingest writes carry their dataset_id so a re-ingest replaces exactly them.

CREATE TABLE IF NOT EXISTS datasets (
    dataset_id   VARCHAR PRIMARY KEY,
    title        VARCHAR NOT NULL,
    version      VARCHAR,            -- upstream commit or release
    source       VARCHAR NOT NULL,   -- folder the files were read from
    sha256       VARCHAR NOT NULL,   -- SHA-256 over the files read (sorted by path)
    license      VARCHAR,
    citation     VARCHAR,
    files        JSON,               -- [{path, sha256, bytes}]
    notes        JSON,               -- what was partial or skipped
    loaded_at    TIMESTAMP NOT NULL,
    description  JSON                -- backend.descriptions.Description: task, labels, splits, baselines, facets
);
ALTER TABLE datasets ADD COLUMN IF NOT EXISTS description JSON;  -- stores written before descriptions

CREATE TABLE IF NOT EXISTS examples (
    dataset_id           VARCHAR NOT NULL,
    example_id           VARCHAR NOT NULL,
    split                VARCHAR NOT NULL,
    input                VARCHAR NOT NULL,  -- question, or NLI premise
    context              VARCHAR,           -- e.g. CREPE comment
    hypothesis           VARCHAR,           -- NLI hypothesis
    gold_label           VARCHAR,           -- E/N/C, FP/N
    gold_labels          VARCHAR[],         -- every label annotators gave (CREPE double labels)
    ambiguous            BOOLEAN NOT NULL DEFAULT FALSE,
    gold_answers         VARCHAR[],
    gold_presuppositions VARCHAR[],
    gold_corrections     VARCHAR[],
    trigger_type         VARCHAR,
    polarity             VARCHAR,           -- non-negated | negated
    adversarial          BOOLEAN,
    answer_type          VARCHAR,           -- entity | number | date | other
    question_type        VARCHAR,           -- what | who | when | which | where | how many | ...
    hop                  VARCHAR,           -- single | multi
    extra                JSON,
    example_key          BIGINT,            -- example_keys.example_key: the join key with predictions
    PRIMARY KEY (dataset_id, example_id)
);
ALTER TABLE examples ADD COLUMN IF NOT EXISTS example_key BIGINT;  -- stores before schema 4

-- An integer per (dataset_id, example_id), handed out in dense blocks as examples and predictions are
-- first written and never taken back (a re-ingest keeps them, so a run's rows keep matching the
-- re-loaded examples). Explore joins examples and predictions on it: dense integers let DuckDB join
-- 1M × 1M rows several times faster than on string ids.
CREATE TABLE IF NOT EXISTS example_keys (
    dataset_id   VARCHAR NOT NULL,
    example_id   VARCHAR NOT NULL,
    example_key  BIGINT NOT NULL,
    PRIMARY KEY (dataset_id, example_id)
);

CREATE TABLE IF NOT EXISTS pairs (
    pair_id     VARCHAR PRIMARY KEY,
    dataset_id  VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,   -- minimal | negation | adversarial
    example_a   VARCHAR NOT NULL,
    example_b   VARCHAR NOT NULL,
    role_a      VARCHAR NOT NULL,   -- e.g. non-negated, presupposed, valid
    role_b      VARCHAR NOT NULL    -- e.g. negated, adversarial, false_assumption
);

CREATE TABLE IF NOT EXISTS passages (
    corpus_id  VARCHAR NOT NULL,
    dataset_id VARCHAR NOT NULL,    -- the ingest that wrote it (corpus)
    doc_id     VARCHAR NOT NULL,    -- 'w' + first 16 hex of SHA-1 of the whitespace-normalised text
    title      VARCHAR,
    text       VARCHAR NOT NULL,
    origins    VARCHAR[] NOT NULL,  -- pools the text was found in
    PRIMARY KEY (corpus_id, doc_id)
);

CREATE TABLE IF NOT EXISTS qrels (
    dataset_id  VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    corpus_id   VARCHAR NOT NULL,
    doc_id      VARCHAR NOT NULL,
    PRIMARY KEY (dataset_id, example_id, corpus_id, doc_id)
);

CREATE TABLE IF NOT EXISTS runs (
    run_id          VARCHAR PRIMARY KEY,
    dataset_id      VARCHAR NOT NULL,
    task            VARCHAR NOT NULL,   -- nli | detect | qa | write | retrieve
    model_id        VARCHAR NOT NULL,
    model_revision  VARCHAR,
    retriever_id    VARCHAR,
    config          JSON,
    code_version    VARCHAR,
    packages        JSON,
    device          VARCHAR,
    seed            INTEGER,
    source          VARCHAR NOT NULL,   -- batch | live | import | baseline
    status          VARCHAR NOT NULL,   -- complete | running | failed
    provenance      VARCHAR,            -- where imported predictions came from
    created_at      TIMESTAMP NOT NULL,
    seconds         DOUBLE
);

CREATE TABLE IF NOT EXISTS predictions (
    run_id      VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    label       VARCHAR,
    probs       DOUBLE[],              -- in the order of the run's config.labels
    answer      VARCHAR,
    text        JSON,                  -- generated presupposition/correction, etc.
    latency_ms  DOUBLE,
    error       VARCHAR,
    example_key BIGINT,                -- example_keys.example_key of (the run's dataset_id, example_id)
    PRIMARY KEY (run_id, example_id)
);
ALTER TABLE predictions ADD COLUMN IF NOT EXISTS example_key BIGINT;  -- stores before schema 4

CREATE TABLE IF NOT EXISTS retrievals (
    run_id      VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    rank        INTEGER NOT NULL,
    doc_id      VARCHAR NOT NULL,
    score       DOUBLE,
    PRIMARY KEY (run_id, example_id, rank)
);

CREATE TABLE IF NOT EXISTS criteria (
    criterion    VARCHAR PRIMARY KEY,
    kind         VARCHAR NOT NULL,   -- numeric | label
    min_value    DOUBLE,
    max_value    DOUBLE,
    labels       VARCHAR[],
    description  VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS ratings (
    dataset_id  VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    run_id      VARCHAR NOT NULL DEFAULT '',  -- '' = a rating of the example itself
    rater_id    VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,             -- crowd | user
    criterion   VARCHAR NOT NULL,
    value       DOUBLE,
    label       VARCHAR,
    note        VARCHAR,
    rated_at    TIMESTAMP,
    PRIMARY KEY (dataset_id, example_id, run_id, rater_id, criterion)
);

CREATE TABLE IF NOT EXISTS meta (
    key    VARCHAR PRIMARY KEY,     -- schema_version, ...
    value  VARCHAR NOT NULL
);

-- Saved slices (issue 15): a named Explore filter set, listed with every run's metric on the Overview.
CREATE TABLE IF NOT EXISTS saved_slices (
    name        VARCHAR PRIMARY KEY,
    dataset_id  VARCHAR NOT NULL,
    filters     JSON NOT NULL,       -- [[facet, [values...]], ...] as backend.explore.Filters
    search      VARCHAR NOT NULL DEFAULT '',
    note        VARCHAR,
    saved_at    TIMESTAMP NOT NULL
);

-- The report (issue 15): charts and tables pinned from any page, in order, each with its caption.
CREATE TABLE IF NOT EXISTS report_items (
    item_id     VARCHAR PRIMARY KEY,
    position    DOUBLE NOT NULL,
    kind        VARCHAR NOT NULL,    -- chart | table
    title       VARCHAR NOT NULL,
    caption     VARCHAR NOT NULL,    -- provenance: dataset, filters, n, runs, date
    content     VARCHAR NOT NULL,    -- chart: Vega-Lite JSON with its data; table: JSON records (orient=table)
    page        VARCHAR,
    pinned_at   TIMESTAMP NOT NULL
);

-- A cache of each run's headline rows (backend/analysis/leaderboard.py), keyed by a fingerprint of what they
-- depend on; rebuilt from the predictions when missing or stale. Not user data (not backed up).
CREATE TABLE IF NOT EXISTS run_metrics (
    run_id       VARCHAR PRIMARY KEY,
    fingerprint  VARCHAR NOT NULL,
    rows         JSON NOT NULL,
    computed_at  TIMESTAMP NOT NULL
);

-- A cache of one dataset's verdicts against the trivial baselines ('' for every dataset's; backend/analysis/
-- verdicts.py), as Parquet, for the version of the data it was computed from (meta 'version:data'): computed
-- once per data version, not on every page render. Not user data (not backed up).
CREATE TABLE IF NOT EXISTS dataset_verdicts (
    dataset_id   VARCHAR PRIMARY KEY,
    data_version VARCHAR NOT NULL,
    frame        BLOB NOT NULL,
    computed_at  TIMESTAMP NOT NULL
);

-- Judges (issue 29): a registered generator scoring another run's stored outputs with a versioned rubric
-- template. One judge run per (judged run, judge model, rubric@version, samples); each score is a row of
-- `judgements`, keyed so that repeated samples of one judge and both orders of a pairwise verdict fit.
CREATE TABLE IF NOT EXISTS judge_runs (
    judge_run_id   VARCHAR PRIMARY KEY,
    run_id         VARCHAR NOT NULL,    -- the judged run (run A of a pairwise judge)
    other_run_id   VARCHAR,             -- pairwise: run B
    dataset_id     VARCHAR NOT NULL,
    model_id       VARCHAR NOT NULL,    -- the judge: a registered generator (local or endpoint)
    rubric         VARCHAR NOT NULL,    -- template name@version
    rubric_sha256  VARCHAR NOT NULL,    -- of the template file: a resumed run never mixes prompts
    kind           VARCHAR NOT NULL,    -- score | pairwise
    source         VARCHAR NOT NULL,    -- judge:<model>:<rubric@version>
    samples        INTEGER NOT NULL,    -- responses per item and criterion (> 1: self-consistency)
    config         JSON,                -- decoding, endpoint, quality note, code version
    status         VARCHAR NOT NULL,    -- running | complete | interrupted
    created_at     TIMESTAMP NOT NULL,
    seconds        DOUBLE
);

CREATE TABLE IF NOT EXISTS judgements (
    judge_run_id  VARCHAR NOT NULL,
    example_id    VARCHAR NOT NULL,
    criterion     VARCHAR NOT NULL,     -- a criterion of `criteria`
    sample        INTEGER NOT NULL,     -- 0 .. samples - 1
    position      VARCHAR NOT NULL,     -- '' (a score) | AB | BA (pairwise: which run was shown first)
    value         DOUBLE,               -- the score; NULL when the response could not be parsed
    verdict       VARCHAR,              -- pairwise: A | B | tie, in run terms (not screen order)
    reason        VARCHAR,              -- the judge's reason text
    parse         VARCHAR NOT NULL,     -- ok | unparsed | out-of-range | ambiguous | empty | error
    response      VARCHAR,              -- the raw response
    prompt        VARCHAR,
    error         VARCHAR,
    tokens_in     INTEGER,
    tokens_out    INTEGER,
    cost          DOUBLE,
    cached        BOOLEAN,
    latency_ms    DOUBLE,
    judged_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (judge_run_id, example_id, criterion, sample, position)
);

-- Rating tasks (issue 29): a run's outputs (or a sample of them) handed out to people with a target
-- overlap k (each item rated by k people); a rater is served one item at a time through a claim that
-- lapses after a while, so two people rating at once are never both served the last missing rating.
CREATE TABLE IF NOT EXISTS rating_tasks (
    task_id     VARCHAR PRIMARY KEY,
    run_id      VARCHAR NOT NULL,
    criteria    VARCHAR[] NOT NULL,
    overlap     INTEGER NOT NULL,     -- k: raters wanted per item
    guideline   VARCHAR NOT NULL,
    seed        INTEGER NOT NULL,     -- the sample's and the order's
    created_at  TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS rating_task_items (
    task_id     VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    position    INTEGER NOT NULL,     -- the order items are served in (shuffled with the seed)
    PRIMARY KEY (task_id, example_id)
);

CREATE TABLE IF NOT EXISTS rating_claims (
    task_id     VARCHAR NOT NULL,
    example_id  VARCHAR NOT NULL,
    rater_id    VARCHAR NOT NULL,
    claimed_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (task_id, example_id, rater_id)
);

-- Who made it (issue 44): the acting identity of the write that created the row — a signed-in e-mail, a link
-- holder, or the local user (store.writer.author). NULL on rows written before schema 9.
ALTER TABLE datasets ADD COLUMN IF NOT EXISTS created_by VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS created_by VARCHAR;
ALTER TABLE saved_slices ADD COLUMN IF NOT EXISTS created_by VARCHAR;
ALTER TABLE report_items ADD COLUMN IF NOT EXISTS created_by VARCHAR;
ALTER TABLE judge_runs ADD COLUMN IF NOT EXISTS created_by VARCHAR;
ALTER TABLE rating_tasks ADD COLUMN IF NOT EXISTS created_by VARCHAR;

-- The audit (issue 44): append-only, one row per write attempted through a permission check — done, refused
-- (with the role it needed) or failed. Nothing in the code updates or deletes these rows; backups keep them.
CREATE TABLE IF NOT EXISTS audit (
    entry_id    VARCHAR PRIMARY KEY,  -- a random id (restore puts back the entries a store lacks)
    happened_at TIMESTAMP NOT NULL,
    actor       VARCHAR NOT NULL,     -- e-mail, link holder's name, or the local user
    role        VARCHAR NOT NULL,     -- owner | analyst | viewer | rater
    via         VARCHAR NOT NULL,     -- local | terminal | sign-in | link
    action      VARCHAR NOT NULL,     -- identity.permissions.ACTIONS
    target      VARCHAR NOT NULL,     -- the object acted on (run id, dataset id, task id, ...)
    outcome     VARCHAR NOT NULL,     -- done | refused | failed
    detail      VARCHAR               -- why refused or failed
);

-- Signed links (issue 44): a person, one object they may work on ('rating-task:<id>'), an expiry. The link
-- itself is HMAC-signed (identity.links); this row lets a link be listed and revoked.
CREATE TABLE IF NOT EXISTS links (
    link_id     VARCHAR PRIMARY KEY,
    person      VARCHAR NOT NULL,
    object      VARCHAR NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    created_by  VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    revoked_at  TIMESTAMP,
    revoked_by  VARCHAR
);

-- Judgement studies (issue 47): a design over a dataset's items, frozen at the first response; participants
-- (each a signed link's person) with their list, recorded order seed and trials; their responses as given. The
-- responses on items are also the crowd ratings of the study's own dataset (dataset_id = study_id).
CREATE TABLE IF NOT EXISTS studies (
    study_id    VARCHAR PRIMARY KEY,
    dataset_id  VARCHAR NOT NULL,     -- where the items come from
    version     INTEGER NOT NULL,     -- 1, +1 per change of the design before the first response
    design      JSON NOT NULL,        -- backend.studies.design.Design.as_dict(): exclusions declared with it
    design_text VARCHAR NOT NULL,     -- the YAML as written
    status      VARCHAR NOT NULL,     -- open | closed
    created_by  VARCHAR,
    created_at  TIMESTAMP NOT NULL,
    frozen_at   TIMESTAMP,            -- the first response: the design no longer changes
    closed_at   TIMESTAMP
);

CREATE TABLE IF NOT EXISTS study_participants (
    study_id        VARCHAR NOT NULL,
    participant_id  VARCHAR NOT NULL, -- the link's person
    list_no         INTEGER NOT NULL, -- the list (Latin square) they were given; random: their own
    seed            UBIGINT NOT NULL, -- of their order (design.participant_seed)
    trials          JSON NOT NULL,    -- [{kind, id}] in the order shown
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP,
    completion_code VARCHAR,
    PRIMARY KEY (study_id, participant_id)
);

CREATE TABLE IF NOT EXISTS study_responses (
    study_id        VARCHAR NOT NULL,
    participant_id  VARCHAR NOT NULL,
    position        INTEGER NOT NULL, -- 0-based, in their trials
    kind            VARCHAR NOT NULL, -- practice | target | control | attention | native
    trial           VARCHAR NOT NULL, -- the example id, or practice:N / attention:N / native
    value           DOUBLE,
    label           VARCHAR,          -- a choice scale's label; native: yes | no
    answered_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (study_id, participant_id, position)
);
-- what the participant's browser measured per answer (schema 12, issue 56; NULL before, or from a script): whether
-- the control was moved, the time from the item's display to the answer (performance.now), and how often and how
-- long they left the tab meanwhile
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS moved BOOLEAN;
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS rt_ms DOUBLE;
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS left_count INTEGER;
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS left_ms DOUBLE;
-- A forced choice's order shown, a reading or Maze trial's regions with their times (schema 18, issue 63 item 6;
-- JSON text, NULL for a rating trial): backend/studies/trials.py
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS detail VARCHAR;
-- Pilots and withdrawal (schema 13, issue 56 item 4). A pilot participant (opened a `study-pilot:<id>` link, the
-- researcher previewing the study) and their responses carry pilot = TRUE: they take no list slot, make no crowd
-- rating, freeze nothing and no analysis, export or archive reads them (backend/store/studies.py filters them).
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS pilot BOOLEAN DEFAULT FALSE;
ALTER TABLE study_responses ADD COLUMN IF NOT EXISTS pilot BOOLEAN DEFAULT FALSE;
-- Every participant whose data were deleted (withdrawn by themselves, or deleted by a researcher on request): who,
-- when, by whom, why, and never their answers. A restore deletes every participant logged here again, so a backup
-- taken before the deletion does not bring them back; their link shows that their answers were withdrawn.
CREATE TABLE IF NOT EXISTS study_deletions (
    study_id        VARCHAR NOT NULL,
    participant_id  VARCHAR NOT NULL,
    deleted_at      TIMESTAMP NOT NULL,
    deleted_by      VARCHAR NOT NULL, -- the participant themselves (withdrawn), or the researcher who deleted
    reason          VARCHAR,
    PRIMARY KEY (study_id, participant_id)
);
-- Places that free themselves (schema 17, issue 63 item 4): a participant who did not finish within the design's
-- time_limit (timed out), or whose submission the researcher marked returned on the platform, holds no place under
-- the cap nor in their list's balance any more; their answers stay (never analysed: they did not finish).
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS ended VARCHAR;      -- timed out | returned
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS ended_at TIMESTAMP;
-- A withdrawn or deleted general-link participant's platform id as a digest (schema 16, issue 63 item 3): SHA-256 of
-- the study id and the platform id. The id itself leaves with the participant's row; the digest only lets the same
-- id be refused a new start, until a researcher releases it (`study release`: then NULL).
ALTER TABLE study_deletions ADD COLUMN IF NOT EXISTS platform_key VARCHAR;
-- General links and recruitment platforms (schema 14, issue 56 item 1). A general link (one URL for everyone on
-- Prolific, SONA or MTurk) is a links row whose person starts general- and whose cap is the most participants it may
-- start (NULL for a personal link). Each participant it starts records the platform's id for them (platform_id,
-- personal data: deleted with the row on withdrawal or deletion), the other parameters kept (platform_keep), the
-- general link (general_link: its cap counts them) and the personal link issued to their browser (browser_link: only
-- the browser holding it acts as them; NULL once a researcher released the id for another browser).
ALTER TABLE links ADD COLUMN IF NOT EXISTS cap INTEGER;
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS platform VARCHAR;
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS platform_id VARCHAR;
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS platform_keep JSON;
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS general_link VARCHAR;
ALTER TABLE study_participants ADD COLUMN IF NOT EXISTS browser_link VARCHAR;
-- Demographics (schema 15, issue 56 item 5): a participant's answers to the design's demographic questions, one row
-- per question (value NULL when they left an optional one blank), written in one transaction with their finishing.
-- Personal data: read only by the study's maker or an owner, never in methods.md or the default archive; deleted with
-- the participant (withdrawal, deletion on request, and again after a restore: store/studies.py REAPPLY). A pilot's
-- are stored apart like their answers (pilot = TRUE) and never read with the real ones.
CREATE TABLE IF NOT EXISTS study_demographics (
    study_id        VARCHAR NOT NULL,
    participant_id  VARCHAR NOT NULL,
    name            VARCHAR NOT NULL, -- the question's name in the design
    value           VARCHAR,          -- as given (a number as text); NULL: left blank
    answered_at     TIMESTAMP NOT NULL,
    pilot           BOOLEAN DEFAULT FALSE,
    PRIMARY KEY (study_id, participant_id, name)
);
