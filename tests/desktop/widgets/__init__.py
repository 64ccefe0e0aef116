"""Tests of ui/tk/widgets/."""
