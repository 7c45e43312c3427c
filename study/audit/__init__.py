"""The blind random audit sample and blind double coding."""
