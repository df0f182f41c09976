"""Mutation suite of the validation harness: realistic bugs, one at a time, against ``validate``.

See ``tests/mutation/README.md``; the catalog is :mod:`tests.mutation.catalog`, the runner
:mod:`tests.mutation.run`.
"""
