"""Tests of ui/tk/find/."""
