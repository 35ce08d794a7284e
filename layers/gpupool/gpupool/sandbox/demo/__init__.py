"""`gpupool demo`: the real functions' stories, played on the sandbox's servers and a simulated clock.

Must not: decide anything (the functions do) or import the adapters.
"""
