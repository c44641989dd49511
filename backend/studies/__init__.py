"""Judgement studies: a design over a dataset's items, participants through signed links, their responses."""
