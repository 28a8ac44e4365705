"""``pattern-gen tune``: choose unroll, tiles and options from the cost model.

``space`` (the axes and configurations of a request), ``evaluate`` (render and estimate them in
worker processes), ``search`` (which to estimate, and the ranking), ``weights`` (the T
distribution), ``apply`` (the winner into a manifest entry).
"""
