"""Tests of acp."""
