"""Tests of the pytest plugin (contextq_fixtures): its report pages, the live fixtures,
the conformance kit."""
