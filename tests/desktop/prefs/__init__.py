"""Tests of ui/tk/prefs/."""
