"""Tests of the desktop (ui/tk/), in folders named as its rooms; the fixtures they share are
in conftest.py."""
