"""The vocabulary every later stage speaks: the op registry, field types, expressions,
predicates, error codes and shared text helpers. Imports nothing else of pattern_gen."""
