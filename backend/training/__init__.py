"""Offline training: data readers and fine-tuning loops."""
