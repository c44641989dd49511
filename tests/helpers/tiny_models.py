"""Tiny random models built inside the tests (no downloads), saved like real checkpoints."""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

CORPUS = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "why is the sky green",
    "yes no maybe",
    "paris is the capital of france",
    "he stopped smoking",
    "she did not stop smoking",
    "Yes No",
] * 4
CHAT = "{% for m in messages %}<user> {{ m['content'] }} {% endfor %}{% if add_generation_prompt %}<bot>{% endif %}"


def _tokenizer(kind: str) -> PreTrainedTokenizerFast:
    if kind == "bert":
        special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=200, special_tokens=special))
        from tokenizers.processors import TemplateProcessing

        tok.post_processor = TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            unk_token="[UNK]",
            pad_token="[PAD]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
        )
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        CORPUS, trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<eos>", "<user>", "<bot>"])
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")
    fast.chat_template = CHAT
    return fast


def classifier(folder: Path, labels: list[str]) -> Path:
    """A 2-layer BERT sequence classifier with the given labels."""
    tokenizer = _tokenizer("bert")
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def generator(folder: Path) -> Path:
    """A 2-layer GPT-2 with a chat template."""
    tokenizer = _tokenizer("gpt2")
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=256,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def register(data_dir: Path, entries: dict[str, dict]) -> None:
    """Write data/registry.local.toml entries (the user's registry) for the tests' models."""
    lines = []
    for name, entry in entries.items():
        lines.append(f"[models.{name}]")
        for key, value in entry.items():
            if isinstance(value, list):
                lines.append(f"{key} = [{', '.join(repr(v).replace(chr(39), chr(34)) for v in value)}]")
            elif isinstance(value, str):
                lines.append(f'{key} = "{value}"')
            else:
                lines.append(f"{key} = {value}")
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "registry.local.toml").write_text("\n".join(lines) + "\n")
