"""Trainers' own formats: which views each takes. verl's rows are made in
:mod:`.verl`, OpenPipe ART's trajectory groups in :mod:`.art`; the writers
that use them are in :mod:`.writers`; docs/datasets.md says which trainer
reads which view.
"""

from __future__ import annotations

FITS = {  # the views each trainer format can hold: their rows start from a prompt
    "verl": ("chat", "turns", "groups"),  # triplets are token ids (agent-lightning): verl reads messages
    "art": ("chat",),
}
CONTENT_FORMATS = tuple(FITS)  # their rows are prompts and replies: content capture is needed
TRAINER_ROWS = ("art",)  # formats whose rows are made per trace by their own builder (datasets/art.py), not a view's
