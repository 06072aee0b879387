pytest_plugins = ["tests.kafka_fixture"]
