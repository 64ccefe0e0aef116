"""Tests of ui/tk/editor/."""
