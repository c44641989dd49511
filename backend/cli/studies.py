"""The study commands of `python -m backend` (issue 47): a judgement study from its design to the archive.

python -m backend study create design.yaml [--replace]      # the study and its dataset (see README: Studies)
python -m backend study links STUDY --count 40 --base-url https://lab.example [--days 30]
python -m backend study links STUDY --pilot                 # a pilot link: take the study yourself, never analysed
python -m backend study links STUDY --general --cap 100     # one URL for Prolific / SONA / MTurk (design: platform)
python -m backend study release STUDY PLATFORM_ID           # let that platform id continue in another browser
python -m backend study returned STUDY PLATFORM_ID          # the submission was returned: its place is free again
python -m backend study delete-participant STUDY PERSON --reason "asked by e-mail"   # their data, on request
python -m backend study status STUDY                        # per list; exclusions rule by rule; condition means
python -m backend study close STUDY                         # no more answers; every page reads the kept participants
python -m backend study export STUDY --out DIR              # responses, design, orders, exclusions, methods
python -m backend study export STUDY --out DIR --with-platform-ids   # + platform ids, demographics (personal data)
python -m backend study model STUDY [--condition C] [--formula 'value ~ ...'] [--coding sum] [--pilot]  # kept
python -m backend study power STUDY [--participants 20 40 60] [--sims 200] [--from-fit NAME [--pilot] | --effect ...]
python -m backend study list

`study model` also takes a graded dataset whose rater ids name one person across items (projective_probability).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from backend.actions import studies as study_actions
from backend.analysis import mixed_model, power_analysis, studies, trial_types
from backend.datasets.validation import DataError
from backend.identity.actor import terminal
from backend.metrics import power
from backend.store.access import session
from backend.store.connection import store_path
from backend.studies import collection
from backend.studies.design import parse


def add(sub) -> None:
    p = sub.add_parser("study", help="judgement studies: design, participant links, status, close, export")
    action = p.add_subparsers(dest="action", required=True)
    q = action.add_parser("create", help="a study from a design file (YAML; README: Studies)")
    q.add_argument("design", type=Path)
    q.add_argument("--replace", action="store_true", help="a new version of the design, before any response")
    q = action.add_parser("links", help="signed links, one participant each (each gets the next list)")
    q.add_argument("study")
    q.add_argument("--count", type=int, default=1, help="how many links")
    q.add_argument("--days", type=float, default=30, help="how long the links work")
    q.add_argument("--base-url", default="http://localhost:8501", help="the dashboard's address, as people reach it")
    q.add_argument(
        "--pilot", action="store_true", help="pilot links: you take the study as a participant, never analysed"
    )
    q.add_argument(
        "--general", action="store_true", help="one general link for a recruitment platform (the design's platform)"
    )
    q.add_argument("--cap", type=int, help="with --general: the most participants it starts (in progress or done)")
    q = action.add_parser("release", help="let a platform id that started in one browser continue in another")
    q.add_argument("study")
    q.add_argument("platform_id", help="the participant's platform id (e.g. their Prolific id)")
    q = action.add_parser("returned", help="mark a submission returned on the platform: its place is free again")
    q.add_argument("study")
    q.add_argument("who", help="the participant's platform id (e.g. their Prolific id) or participant id")
    q = action.add_parser(
        "delete-participant", help="delete one participant's answers and ratings on request (logged, no answers)"
    )
    q.add_argument("study")
    q.add_argument("participant", help="their id (the link's person, e.g. STUDY-007)")
    q.add_argument("--reason", default="on the participant's request", help="kept in the deletions log")
    for name, text in (
        ("status", "participants per list, the exclusions rule by rule, condition means before and after"),
        ("close", "take no more answers; from then on pages and exports read the participants kept"),
    ):
        action.add_parser(name, help=text).add_argument("study")
    q = action.add_parser("export", help="what a paper's methods section and its data archive need")
    q.add_argument("study")
    q.add_argument("--out", type=Path, required=True, help="a folder (made if missing), or a .zip file")
    q.add_argument(
        "--with-platform-ids",
        action="store_true",
        help="add platform_ids.csv and demographics.csv: personal data for the lab's own records, never to share "
        "(the study's maker or an owner; audited)",
    )
    q.add_argument("--formula", default="", help="methods.md reports the kept fit of this model (default: the default)")
    q.add_argument("--power", metavar="KEY", help="methods.md reports this power run (`study power` prints its key)")
    q = action.add_parser(
        "model", help="a mixed-effects model of the answers (participants and items as random effects)"
    )
    q.add_argument("study", help="a study, or a graded dataset whose rater ids name one person across items")
    q.add_argument("--condition", help="the fixed effect (a graded dataset: one of its grouping facets or its prior)")
    q.add_argument(
        "--formula",
        help="the model in lme4's syntax over participant, item, value and the data's facets, e.g. 'value ~ prior + "
        "(1 + prior | participant) + (1 | predicate) + (1 | content)' (default: the maximal structure the design "
        "justifies, printed with the fit)",
    )
    q.add_argument("--coding", choices=mixed_model.CODINGS, default="treatment", help="of every factor")
    q.add_argument("--reference", help="the condition's reference level (default: the coding's)")
    q.add_argument("--pilot", action="store_true", help="the study's pilot answers (never analysed with the real ones)")
    q = action.add_parser("power", help="power by simulation at several participant counts, before launch")
    q.add_argument("study")
    q.add_argument(
        "--participants", type=int, nargs="+", help="counts to simulate (default: five multiples of the lists from 20)"
    )
    q.add_argument(
        "--test", choices=list(power.TESTS), default="model",
        help="model: each simulated study by the analysis's mixed model and its Satterthwaite t tests (default); "
        "f1: the fast by-participant t test",
    )  # fmt: skip
    q.add_argument("--formula", default="", help="the analysis's model (default: the generating model's structure)")
    q.add_argument("--sims", type=int, default=power_analysis.DEFAULT_SIMS, help="simulated studies per count")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--items", type=int, help="simulate the design with this many target items (default: its own)")
    q.add_argument(
        "--from-fit", metavar="NAME", help="assume what the kept mixed-model fit of NAME (a study) estimates"
    )
    q.add_argument("--pilot", action="store_true", help="with --from-fit: the kept fit of NAME's pilot answers")
    q.add_argument("--reference", help="the reference condition (default: the first in sorted order)")
    q.add_argument("--intercept", type=float, help="the reference condition's mean answer")
    q.add_argument("--effect", nargs="+", default=[], metavar="CONDITION=DIFFERENCE", help="each other condition's")
    for name in ("participant", "item", "slope", "residual"):
        q.add_argument(f"--sd-{name}", type=float, default=0.0 if name == "slope" else None)
    action.add_parser("list", help="every study, newest first")
    p.set_defaults(func=cmd_study)


def cmd_study(args: argparse.Namespace) -> int:
    try:
        if args.action in UNLOCKED:  # long computations: the store is read, then closed while they run
            return UNLOCKED[args.action](args)
        with session(args.store) as con:
            return ACTIONS[args.action](con, args)
    except (DataError, collection.StudyRefused, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _create(con, args) -> int:
    if not args.design.is_file():
        raise collection.StudyRefused("design", f"{args.design} is not a file")
    text = args.design.read_text()
    piloted = studies.pilots(con, parse(text, str(args.design)).name) if args.replace else {"answers": 0}
    study_id = study_actions.create(con, text, str(args.design), args.replace, actor=terminal())
    if piloted["answers"]:
        print(f"deleted {piloted['answers']} pilot answers of {piloted['participants']} pilots (the old design's)")
    row = studies.listing(con).set_index("study_id").loc[study_id]
    kind = trial_types.kind_of(con, study_id)
    kept = (
        f"its responses become the crowd ratings of the dataset {study_id}"
        if kind == "rating"
        else f"its {kind.replace('_', ' ')} answers are kept with the study (`study status`, `study export`)"
    )
    print(
        f"study {study_id} (version {row['version']}) over {row['dataset_id']}: {kept}; make links with "
        f"`python -m backend study links {study_id} --count N`"
    )
    return 0


def _links(con, args) -> int:
    if args.general:
        if args.pilot or args.cap is None:
            raise collection.StudyRefused("cap", "--general takes --cap N (the most participants), and no --pilot")
        link = study_actions.general_link(
            con, store_path(args.store), args.study, args.cap, args.days, actor=terminal()
        )
        print(f"general link (cap {args.cap}): {collection.general_url(con, args.study, link.url(args.base_url))}")
        print(f"until {link.expires_at:%Y-%m-%d %H:%M} UTC; revoke it with the Study page or `links revoke`")
        return 0
    if args.cap is not None:
        raise collection.StudyRefused("cap", "--cap is for --general links")
    make = study_actions.pilot_links if args.pilot else study_actions.make_links
    made = make(con, store_path(args.store), args.study, args.count, args.days, actor=terminal())
    if args.pilot:
        print("pilot links: your answers through them are stored apart, never analysed or exported", file=sys.stderr)
    for link in made:
        print(f"{link.person}: {link.url(args.base_url)}  (until {link.expires_at:%Y-%m-%d %H:%M} UTC)")
    return 0


def _release(con, args) -> int:
    person = study_actions.release(con, args.study, args.platform_id, actor=terminal())
    print(
        f"released {person}: the next browser that opens the general link with that id continues their answers "
        "(or, if they withdrew, starts again as a new participant)"
    )
    return 0


def _returned(con, args) -> int:
    person = study_actions.mark_returned(con, args.study, args.who, actor=terminal())
    print(f"marked {person} returned: their place and list slot are free again; their answers stay (not analysed)")
    return 0


def _delete_participant(con, args) -> int:
    gone = study_actions.delete_participant(con, args.study, args.participant, args.reason, actor=terminal())
    print(
        f"deleted {args.participant} from {args.study}: {gone['responses']} responses, {gone['ratings']} ratings; "
        "the deletions log keeps who, when and why (no answers), and a restore deletes them again"
    )
    return 0


def _status(con, args) -> int:
    row = studies.listing(con).set_index("study_id")
    if args.study not in row.index:
        raise collection.StudyRefused("study", f"no study {args.study!r}; the studies are {list(row.index)}")
    found = row.loc[args.study]
    print(f"study {args.study}: {found['status']}, version {found['version']}, over {found['dataset_id']}")
    print(studies.analysed(con, args.study))
    with pd.option_context("display.width", 160, "display.max_columns", 20, "display.max_colwidth", 70):
        print("\nper list:\n" + studies.progress(con, args.study).to_string(index=False))
        print("\nexclusions, in the declared order:\n" + studies.exclusion_log(con, args.study).to_string(index=False))
        for title, table in studies.results(con, args.study).items():
            title = "mean answer per condition (95% CI)" if title == "condition means" else title
            print(f"\n{title}:\n" + table.round(3).to_string(index=False))
    return 0


def _close(con, args) -> int:
    closed = study_actions.close(con, args.study, actor=terminal())
    print(
        f"closed {args.study}: {closed['participants']} participants, {len(closed['excluded'])} left out by the "
        f"exclusions or not finished ({', '.join(closed['excluded']) or 'none'})"
    )
    return 0


def _export(con, args) -> int:
    out = args.out
    if out.suffix == ".zip":
        out.parent.mkdir(parents=True, exist_ok=True)
        made = study_actions.archive_with_platform_ids if args.with_platform_ids else study_actions.archive_zip
        out.write_bytes(made(con, args.study, args.formula, args.power, actor=terminal()))
        personal = " (with platform_ids.csv and demographics.csv: personal data, not to share)"
        print(f"wrote {out}" + (personal if args.with_platform_ids else ""))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    files = study_actions.archive(con, args.study, args.formula, args.power, actor=terminal())
    if args.with_platform_ids:  # the lab's own records: each read audited, for the study's maker or an owner
        for name, read in (
            ("platform_ids.csv", study_actions.platform_ids),
            ("demographics.csv", study_actions.demographics),
        ):
            files[name] = read(con, args.study, actor=terminal()).to_csv(index=False).encode()
    for name, data in files.items():
        (out / name).write_bytes(data)
        print(f"wrote {out / name}")
    return 0


def _model(args) -> int:
    with session(args.store) as con:
        model = mixed_model.chosen(
            con, args.study, args.condition, formula=args.formula, coding=args.coding, reference=args.reference,
            pilot=args.pilot,
        )  # fmt: skip
        note = mixed_model.scale_note(con, args.study)
        said = studies.analysed(con, args.study) if collection.analysed(con, args.study) is not None else ""
        described = mixed_model.groups(mixed_model.frame(con, model), model)
    fitted, kept = mixed_model.fit(args.store, model)
    if args.pilot:
        said = f"the study's pilot, {fitted.groups['participant']:,} (never analysed with the real answers)"
    print(fitted.summary(described))
    print("\n".join(line for line in (note, f"Participants: {said}." if said else "") if line))
    print(f"kept at {kept}")
    return 0 if fitted.converged else 1


def _power(args) -> int:
    with session(args.store) as con:
        request = power_request(con, args)
    print(
        f"{request.study}: {request.sims} simulated studies at each of {list(request.counts)} participants; assumed "
        f"({request.source}): {power.describe(request.assumed)}"
    )
    table = power_analysis.run(request, args.store)
    print(f"kept as {request.key()} (the key `study export {request.study} --power` takes)")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.drop(columns="test").round(3).to_string(index=False))
    print(f"each simulated study analysed by {request.analysis()}")
    return 0


def power_request(con, args) -> power_analysis.Request:
    """The power analysis the arguments ask for: assumptions from a kept fit (`--from-fit`) or typed."""
    return power_analysis.request(
        con,
        args.study,
        tuple(args.participants) if args.participants else None,
        args.sims,
        args.seed,
        test=args.test,
        formula=args.formula,
        items_count=args.items,
        from_fit=args.from_fit,
        pilot=args.pilot,
        reference=args.reference,
        intercept=args.intercept,
        effects=dict(_effect(text) for text in args.effect),
        sd_participant=args.sd_participant,
        sd_item=args.sd_item,
        sd_slope=args.sd_slope,
        sd_residual=args.sd_residual,
    )


def _effect(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    try:
        return name, float(value)
    except ValueError:
        raise ValueError(f"--effect: {text!r}; expected CONDITION=DIFFERENCE, e.g. b=0.1") from None


def _list(con, args) -> int:
    found = studies.listing(con)
    if found.empty:
        print("no studies; make one with `python -m backend study create design.yaml`")
    for row in found.itertuples():
        print(
            f"{row.study_id}  {row.status:6} v{row.version}  over {row.dataset_id}  {row.participants} started, "
            f"{row.finished} finished, {row.responses} answers"
        )
    return 0


ACTIONS = {
    "create": _create,
    "links": _links,
    "release": _release,
    "delete-participant": _delete_participant,
    "returned": _returned,
    "status": _status,
    "close": _close,
    "export": _export,
    "list": _list,
}
UNLOCKED = {"model": _model, "power": _power}
