"""Tests of desktop."""
