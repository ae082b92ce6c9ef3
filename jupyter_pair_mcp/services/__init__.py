"""Services: state and behaviour that outlive one call or span several adapters: who is calling
(actors), presence and activity, history with provenance, forks, execution runs, and inspection of
kernel variables. Tools call them; they call adapters.
"""
