"""latentzoo: latent-class and Bayesian clustering models, PyMC references and fast inference."""
