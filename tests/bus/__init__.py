"""Tests of bus."""
