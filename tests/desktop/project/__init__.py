"""Tests of ui/tk/project/."""
