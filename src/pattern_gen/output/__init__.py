"""Output: the atomic writer, ``generate`` as a library function, and running an instance."""
