"""The judge commands of `python -m backend`: judge (score a stored run's outputs with an LLM judge) and
judges (a run's judges and how far each agrees with the people who rated it). See backend.analysis.judging.

    python -m backend judge --model my-llm --run RUN --rubric judge-crepe-writing --limit 20
    python -m backend judge --model my-llm --run RUN --rubric judge-qa-equivalence --samples 3
    python -m backend judge --model my-llm --run RUN_A --versus RUN_B --rubric judge-pairwise
    python -m backend rescore --run RUN --metric bleu
    python -m backend judges --run RUN
"""

from __future__ import annotations

import argparse
import sys

from backend.actions import jobs as job_actions
from backend.analysis import judging, pairwise
from backend.execution import rescoring
from backend.models.output import RunStopped
from backend.models.prompts.templates import TemplateProblem
from backend.store.access import session


def add(sub) -> None:
    p = sub.add_parser(
        "judge",
        help="score a stored run's outputs with a judge (a registered generator + a rubric template)",
        description="Resumable like predict: the same command continues an interrupted judge run. Scores that "
        "cannot be parsed are stored as unparsed, not guessed.",
    )
    p.add_argument("--model", required=True, help="the judge: a registered generator (`python -m backend models`)")
    p.add_argument("--run", required=True, help="the run whose outputs are judged")
    p.add_argument("--rubric", required=True, help="a judge template, name[@version] (`python -m backend prompts`)")
    p.add_argument("--samples", type=int, default=1, help="responses per item and criterion (> 1: self-consistency)")
    p.add_argument("--temperature", type=float, help="default: the model's (0 for endpoints); 0.7 when sampled")
    p.add_argument("--limit", type=int, help="only the first N outputs (by example id)")
    p.add_argument("--max-cost", type=float, help="USD this call may spend on an endpoint")
    p.add_argument("--versus", help="a pairwise rubric: run B, compared with --run in both orders")
    p.add_argument(
        "--max-tokens", type=int, default=judging.MAX_TOKENS, help="of each response (the score comes first)"
    )
    p.set_defaults(func=cmd_judge)
    p = sub.add_parser("rescore", help="score a stored run's outputs by a metric, without re-running it")
    p.add_argument("--run", required=True)
    p.add_argument("--metric", required=True, choices=sorted(rescoring.METRICS))
    p.set_defaults(func=cmd_rescore)
    p = sub.add_parser("judges", help="a run's judges: parse rates and agreement with the people who rated it")
    p.add_argument("--run", required=True)
    p.set_defaults(func=cmd_judges)


def cmd_judge(args: argparse.Namespace) -> int:
    request = judging.JudgeRequest(
        model=args.model,
        run=args.run,
        rubric=args.rubric,
        samples=args.samples,
        temperature=args.temperature,
        limit=args.limit,
        versus=args.versus,
        max_tokens=args.max_tokens,
    )
    try:
        allowed = job_actions.job_check("judge", args.run)
        judge_run_id = judging.judge(args.store, request, max_cost=args.max_cost, allowed=allowed)
    except RunStopped as exc:
        print(
            f"error: the judge run stopped: {exc}\nWhat was judged is stored; the same command resumes.",
            file=sys.stderr,
        )
        return 1
    except (ValueError, TemplateProblem, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with session(args.store) as con:
        print(_summary(con, args.run, judge_run_id))
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    try:
        scorer_id = rescoring.rescore(args.store, args.run, args.metric)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with session(args.store) as con:
        print(_summary(con, args.run, scorer_id))
        print(judging.scorer_means(con, scorer_id).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def _summary(con, run_id: str, judge_run_id: str) -> str:
    row = judging.all_judge_runs(con, run_id).set_index("judge_run_id").loc[judge_run_id]
    return (
        f"judge run {judge_run_id}: {row['status']}; {row['judgements']:,} judgements of {row['items']:,} outputs, "
        f"{row['parsed']:,} parsed, {row['unparsed']:,} unparsed, {row['errors']:,} errors; ${row['cost']:.4f}"
    )


def cmd_judges(args: argparse.Namespace) -> int:
    with session(args.store) as con:
        runs = judging.all_judge_runs(con, args.run)
        if runs.empty:
            print(f"no judge has scored {args.run}; start one with `python -m backend judge --run ...`")
            return 0
        for judge_run_id, kind in zip(runs["judge_run_id"], runs["kind"]):
            print(_summary(con, args.run, judge_run_id))
            if kind == "metric":
                print(judging.scorer_means(con, judge_run_id).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
                continue
            if kind == "pairwise":
                print(pairwise.summary(con, judge_run_id).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
                continue
            table = judging.agreement_table(con, judge_run_id, args.run)
            if table.empty:
                print("  no parsed scores yet")
                continue
            print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            for row in judging.verdict(table).itertuples():
                print(f"  {row.criterion}: {row.trust} — {row.why}")
    return 0
