"""The shoppers of experiments/locust/stock.yaml: each asks for a stock
level once a second, under the request name `stock` (the drill's route)."""

from locust import HttpUser, constant_throughput, task


class Shopper(HttpUser):
    wait_time = constant_throughput(1)

    @task
    def stock(self):
        self.client.get("/stock/sku-1", name="stock", timeout=3)
