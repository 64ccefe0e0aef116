"""Tests of ui/tk/output/."""
