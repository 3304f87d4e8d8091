"""What a log's clusters and a live simulation's share: memberships as CSR rows."""


class Memberships:
    """Clusters as CSR: offsets (k + 1) into member (particle ids) and weight, count of them."""

    def members(self, c):
        """The particles of cluster c."""
        return self.member[self.offsets[c]:self.offsets[c + 1]]

    def weights(self, c):
        """Their weights w_ic in cluster c."""
        return self.weight[self.offsets[c]:self.offsets[c + 1]]

    def __len__(self):
        return self.count
