"""One loader per dataset, chosen by name: `LOADERS[name](sources)`; `DATASETS[name]` describes it.

To add a dataset: write `backend/datasets/<name>.py` with `load(sources) -> Bundle`, add a
`DatasetSpec` below (markers, licence, how to add the files), add it to LOADERS, and (if public)
its files and SHA-256 to `manifest.toml`. `backend.imports.ingest` does the rest.
"""

from __future__ import annotations

from backend.datasets import (
    commitmentbank,
    corpus,
    crepe,
    falseqa,
    ifqa,
    imppres,
    nope,
    projective_probability,
    propres,
    qaqa,
    synqa2,
)
from backend.datasets.base import Loader
from backend.datasets.description import Description
from backend.datasets.sources import DatasetSpec

_DETECT = crepe.DETECT

_DRIVE = "https://github.com/velocityCavalry/CREPE#data"
DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "nope",
            "NOPE (naturally occurring presuppositions)",
            ("annotated_corpus/nli_corpus.main.jsonl", "annotated_corpus/nli_corpus.adv.jsonl"),
            "none stated upstream; COCA excerpts, research use with citation",
            "Parrish et al., CoNLL 2021",
            "put the nyu-mll/nope repository's annotated_corpus/ and model_results/ folders in data/raw/nope/ "
            "(or run ingest online to download them)",
            description=nope.DESCRIPTION,
        ),
        DatasetSpec(
            "ifqa",
            "IfQA (counterfactual presuppositions)",
            ("dataset/full_split/*.json", "dataset/few_split/*.json"),
            "ODC-BY (allenai.org/data/ifqa); passages CC BY-SA",
            "Yu et al., EMNLP 2023",
            "put the wyu97/IfQA repository's dataset/ folder in data/raw/ifqa/ (or run ingest online to download it)",
            description=Description(
                "qa",
                headline_splits=("S-dev",),
                train_split="S-train",
                dev_split="S-dev",
                normalised="nothing: the questions and answers as published",
            ),
        ),
        DatasetSpec(
            "falseqa",
            "FalseQA (false-premise questions)",
            ("dataset/*.csv",),
            "none stated upstream; cite the paper",
            "Hu et al., ACL 2023",
            "put the thunlp/FalseQA repository's dataset/ folder in data/raw/falseqa/ (or run ingest online)",
            description=Description(
                **_DETECT,
                headline_splits=("test",),
                train_split="train",
                dev_split="valid",
                normalised="answers are stripped of surrounding spaces; otherwise the text as published",
            ),
        ),
        DatasetSpec(
            "crepe",
            "CREPE (false presuppositions in Reddit questions)",
            ("*.jsonl", "data/labeled_data/*.jsonl", "sycon_bench_subset/questions.txt"),
            "BSD-3-style (CREPE repository)",
            "Yu, Min, Zettlemoyer, Hajishirzi, ACL 2023",
            f"download CREPE_data.zip from the Google Drive folder linked at {_DRIVE}, unzip it and put "
            "train.jsonl, dev.jsonl and test.jsonl in data/raw/crepe/ (or pass --source crepe=DIR)",
            description=crepe.DESCRIPTION,
        ),
        DatasetSpec(
            "synqa2",
            "Syn-(QA)² (synthetic minimal pairs)",
            ("**/Singlehop_question.csv", "**/singlehop_unperturbed.csv", "**/Hotpot_Questions.csv"),
            "MIT (repository)",
            "Daswani, Sawant, Kim 2024",
            "download the archive linked in the README of github.com/ashwindaswanibu/QAQA-Synthetic-Dataset, "
            "extract it with password 'synqa2' (unzip -P synqa2 FILE) and put the CSV files in data/raw/synqa2/ "
            "(or pass --source synqa2=DIR)",
            description=Description(
                **_DETECT,
                headline_splits=("test",),
                normalised="fields are stripped of surrounding spaces; otherwise the text as published",
            ),
        ),
        DatasetSpec(
            "qaqa",
            "(QA)² (questions with questionable assumptions)",
            ("Data/QAQA.csv", "Data/QAQA_adaptation_set_Dec2022.csv"),
            "none stated upstream; research use with citation (evaluation set: test only, BIG-bench canary)",
            "Kim, Htut, Bowman, Petty, ACL 2023",
            "put Data/QAQA.csv (the release's QAQA_evaluation_set_Dec2022.csv) and "
            "Data/QAQA_adaptation_set_Dec2022.csv "
            "in data/raw/qaqa/ (or run ingest online to download the copies in varunsingh3000/false-premise-project)",
            description=qaqa.DESCRIPTION,
        ),
        DatasetSpec(
            "commitmentbank",
            "CommitmentBank (speaker commitment under entailment-cancelling operators)",
            ("CommitmentBank-items.csv",),
            "none stated upstream; BNC, Switchboard and WSJ excerpts, research use with citation",
            "de Marneffe, Simons, Tonhauser, SuB 23, 2019",
            "put CommitmentBank-items.csv of the mcdm/CommitmentBank repository in data/raw/commitmentbank/ "
            "(or run ingest online to download it)",
            description=commitmentbank.DESCRIPTION,
        ),
        DatasetSpec(
            "imppres",
            "IMPPRES presuppositions (templated NLI under five operators)",
            ("dataset/presupposition/*.jsonl",),
            "CC BY-NC 4.0 (non-commercial use only)",
            "Jeretič, Warstadt, Bhooshan, Williams, ACL 2020",
            "put the facebookresearch/Imppres repository's dataset/presupposition/ folder in data/raw/imppres/ "
            "(or run ingest online to download it)",
            description=imppres.DESCRIPTION,
            shared="nli_train/imppres",
        ),
        DatasetSpec(
            "propres",
            "PROPRES (presupposition triggers under five environments, with crowd judgements)",
            ("tsv/*_again.tsv", "human/human_annotated_data_for_target_conditions.csv"),
            "none stated upstream; research use with citation",
            "Asami & Sugawara, CoNLL 2023",
            "put the nii-cl/projectivity-of-presupposition repository's propres/presupposition_trigger_tsv/*.tsv in "
            "data/raw/propres/tsv/ and propres/propres_human_results/human_annotated_data_for_target_conditions.csv "
            "in data/raw/propres/human/ (or run ingest online to download them)",
            description=propres.DESCRIPTION,
        ),
        DatasetSpec(
            "projective_probability",
            "Projective probability (certainty ratings for 20 clause-embedding predicates, with and without a prior)",
            ("projectivity_no_fact_cd.csv", "projectivity_cd.csv"),
            "none stated upstream; research use with citation",
            "Degen & Tonhauser, Open Mind 2021 and Language 2022",
            "put results/5-projectivity-no-fact/data/cd.csv of the judith-tonhauser/projective-probability "
            "repository in data/raw/projective_probability/ as projectivity_no_fact_cd.csv and "
            "results/3-projectivity/data/cd.csv as projectivity_cd.csv (or run ingest online to download them)",
            description=projective_probability.DESCRIPTION,
        ),
        DatasetSpec(
            "corpus",
            "Retrieval corpus (Wikipedia paragraphs + IfQA gold passages)",
            ("hipporag_legacy_data/*.json",),
            "MIT (HippoRAG); texts Wikipedia CC BY-SA",
            "Gutiérrez et al. 2024 (HippoRAG) pools",
            "put HippoRAG's legacy data/{2wikimultihopqa_corpus,musique_train_corpus,hotpotqa_train_corpus}.json "
            "in data/raw/corpus/hipporag_legacy_data/ (or run ingest online)",
            needs=("ifqa",),
        ),
    )
}

LOADERS: dict[str, Loader] = {
    "nope": nope.load,
    "ifqa": ifqa.load,
    "falseqa": falseqa.load,
    "crepe": crepe.load,
    "synqa2": synqa2.load,
    "qaqa": qaqa.load,
    "commitmentbank": commitmentbank.load,
    "imppres": imppres.load,
    "propres": propres.load,
    "projective_probability": projective_probability.load,
    "corpus": corpus.load,
}


def spec(name: str) -> DatasetSpec:
    """The spec of a dataset, or a ValueError listing the known names."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(DATASETS)}")
    return DATASETS[name]
