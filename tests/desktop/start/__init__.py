"""Tests of ui/tk/start/."""
