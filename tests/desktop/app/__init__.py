"""Tests of ui/tk/app/."""
