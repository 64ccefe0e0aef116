"""Tests of text."""
