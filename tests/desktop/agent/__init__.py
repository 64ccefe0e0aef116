"""Tests of ui/tk/agent/."""
