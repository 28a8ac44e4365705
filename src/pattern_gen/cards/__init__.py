"""Cards: the pydantic card model, the YAML source map and the loader (YAML -> models)."""
