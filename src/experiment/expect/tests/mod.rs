mod fixture;
